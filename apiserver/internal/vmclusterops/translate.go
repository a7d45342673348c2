package vmclusterops

import (
	"strconv"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// target is the vmcluster of a request.
type target struct {
	ID, Name, Namespace, Release string
}

func targetOf(v vmclusters.VMCluster) target {
	return target{
		ID:        v.ID,
		Name:      strings.TrimPrefix(v.Name, vmclusters.CollectionPrefix),
		Namespace: v.HelmReleaseInfo.ReleaseNamespace,
		Release:   v.HelmReleaseInfo.ReleaseName,
	}
}

func objectLabels(t target) map[string]string {
	l := vmclusters.Labels(t.Name)
	l[opsv1.LabelVMClusterID] = t.ID
	return l
}

// selector selects the objects of t: by the vmcluster's id.
func (t target) selector() map[string]string {
	return map[string]string{opsv1.LabelVMClusterID: t.ID}
}

func replicas(n *int64) *int32 {
	if n == nil {
		return nil
	}
	v := int32(*n)
	return &v
}

func quantities(m map[string]string) map[string]resource.Quantity {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]resource.Quantity, len(m))
	for k, v := range m {
		out[k] = resource.MustParse(v) // validated by Decode
	}
	return out
}

func componentResources(r *Resources) *opsv1.ComponentResources {
	if r == nil {
		return nil
	}
	return &opsv1.ComponentResources{Requests: quantities(r.Requests), Limits: quantities(r.Limits)}
}

// toSpec builds the CR spec of a validated request for t.
func toSpec(t target, req *Request) opsv1.VMClusterOperationSpec {
	spec := opsv1.VMClusterOperationSpec{
		VMCluster:                  opsv1.VMClusterReference{Namespace: t.Namespace, Name: t.Release},
		Type:                       opsv1.VMClusterOperationType(req.Type),
		AcknowledgeReplicationRisk: req.AcknowledgeReplicationRisk,
		Paused:                     req.Paused,
	}
	if h := req.HorizontalScaling; h != nil {
		spec.HorizontalScaling = &opsv1.HorizontalScaling{VMStorage: replicas(h.VMStorage), VMInsert: replicas(h.VMInsert), VMSelect: replicas(h.VMSelect)}
	}
	if v := req.VerticalScaling; v != nil {
		spec.VerticalScaling = &opsv1.VerticalScaling{VMStorage: componentResources(v.VMStorage), VMInsert: componentResources(v.VMInsert), VMSelect: componentResources(v.VMSelect)}
	}
	if r := req.Restart; r != nil {
		spec.Restart = &opsv1.Restart{}
		for _, c := range r.Components {
			spec.Restart.Components = append(spec.Restart.Components, opsv1.VMClusterComponent(c))
		}
	}
	for _, c := range req.Order {
		spec.Order = append(spec.Order, opsv1.VMClusterComponent(c))
	}
	if req.StepTimeout != "" {
		d, _ := time.ParseDuration(req.StepTimeout)
		spec.StepTimeout = &metav1.Duration{Duration: d}
	}
	return spec
}

// requestOf is the request a spec was made from.
func requestOf(s *opsv1.VMClusterOperationSpec) Request {
	r := Request{Type: string(s.Type), AcknowledgeReplicationRisk: s.AcknowledgeReplicationRisk, Paused: s.Paused}
	i64 := func(n *int32) *int64 {
		if n == nil {
			return nil
		}
		v := int64(*n)
		return &v
	}
	if h := s.HorizontalScaling; h != nil {
		r.HorizontalScaling = &Replicas{VMStorage: i64(h.VMStorage), VMInsert: i64(h.VMInsert), VMSelect: i64(h.VMSelect)}
	}
	res := func(c *opsv1.ComponentResources) *Resources {
		if c == nil {
			return nil
		}
		out := &Resources{}
		for k, q := range c.Requests {
			if out.Requests == nil {
				out.Requests = map[string]string{}
			}
			out.Requests[k] = q.String()
		}
		for k, q := range c.Limits {
			if out.Limits == nil {
				out.Limits = map[string]string{}
			}
			out.Limits[k] = q.String()
		}
		return out
	}
	if v := s.VerticalScaling; v != nil {
		r.VerticalScaling = &ResourcesPerComponent{VMStorage: res(v.VMStorage), VMInsert: res(v.VMInsert), VMSelect: res(v.VMSelect)}
	}
	if rs := s.Restart; rs != nil {
		r.Restart = &Restart{}
		for _, c := range rs.Components {
			r.Restart.Components = append(r.Restart.Components, string(c))
		}
	}
	for _, c := range s.Order {
		r.Order = append(r.Order, string(c))
	}
	if s.StepTimeout != nil {
		r.StepTimeout = s.StepTimeout.Duration.String()
	}
	return r
}

// phaseOf is the phase shown: Pending until the operator wrote one.
func phaseOf(o *opsv1.VMClusterOperation) string {
	if o.Status.Phase == "" {
		return string(opsv1.OperationPhasePending)
	}
	return string(o.Status.Phase)
}

// toOperation is the API view of an object.
func toOperation(o *opsv1.VMClusterOperation) Operation {
	vm := o.Labels[vmclusters.LabelVMCluster]
	out := Operation{
		Name:            vmclusters.CollectionPrefix + vm + "/" + CollectionID + "/" + o.Name,
		ID:              string(o.UID),
		VMCluster:       vmclusters.CollectionPrefix + vm,
		VMClusterID:     o.Labels[opsv1.LabelVMClusterID],
		Type:            string(o.Spec.Type),
		Phase:           phaseOf(o),
		Progress:        o.Status.Progress,
		WaitingFor:      o.Status.WaitingFor,
		Paused:          o.Spec.Paused,
		CancelRequested: o.Spec.Cancel,
		Request:         requestOf(&o.Spec),
		Steps:           []Step{},
		InitiatedBy:     o.Annotations[opsv1.AnnotationInitiatedBy],
		CreateTime:      formatTime(&o.CreationTimestamp),
		StartTime:       formatTime(o.Status.StartTime),
		CompletionTime:  formatTime(o.Status.CompletionTime),
	}
	if c := apimeta.FindStatusCondition(o.Status.Conditions, opsv1.ReadyCondition); c != nil {
		out.Message = c.Message
	}
	for _, s := range o.Status.Steps {
		out.Steps = append(out.Steps, Step{
			ID: s.ID, Component: string(s.Component), Action: string(s.Action), From: s.From, To: s.To, Pod: s.Pod,
			Phase: string(s.Phase), StartTime: formatTime(s.StartTime), CompletionTime: formatTime(s.CompletionTime), Message: s.Message,
		})
	}
	return out
}

func formatTime(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// int32Of reads a JSON number or numeric string.
func int32Of(v any) (int32, bool) {
	switch x := v.(type) {
	case float64:
		return int32(x), true
	case string:
		n, err := strconv.Atoi(x)
		return int32(n), err == nil
	}
	return 0, false
}
