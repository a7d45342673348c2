package vmclusterops

import (
	"bytes"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/jsonbody"
	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// The rules are the CRD's (operator/api/v1alpha1), checked here first so a
// caller gets one violation per bad field; the replication-factor rule is
// ops-operator's preflight too (opsv1.ReplicationRiskProblem).
var (
	opTypes    = []string{string(opsv1.OperationHorizontalScaling), string(opsv1.OperationVerticalScaling), string(opsv1.OperationRestart)}
	components = []string{string(opsv1.ComponentVMStorage), string(opsv1.ComponentVMInsert), string(opsv1.ComponentVMSelect)}
	phases     = []string{"Pending", "Running", "Paused", "Succeeded", "Failed", "Cancelling", "Cancelled"}
)

const (
	minReplicas, maxReplicas = 1, 100
	minStepTimeout           = time.Minute
	maxStepTimeout           = 6 * time.Hour
)

// Decode parses and validates a POST body.
func Decode(body []byte) (*Request, *apierror.Error) {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	var req Request
	if err := jsonbody.Decode(body, &req); err != nil {
		return nil, err
	}
	if v := Validate(&req); len(v) > 0 {
		return nil, apierror.InvalidArgument(fmt.Sprintf("the operation request has %d invalid field(s)", len(v)), v...)
	}
	return &req, nil
}

// Validate returns one violation per bad field.
func Validate(r *Request) []apierror.FieldViolation {
	var v []apierror.FieldViolation
	add := func(field, format string, args ...any) { v = append(v, apierror.Violation(field, format, args...)) }
	if r.Type == "" {
		add("type", "is required: one of %s", strings.Join(opTypes, ", "))
	} else if !slices.Contains(opTypes, r.Type) {
		add("type", "must be one of %s", strings.Join(opTypes, ", "))
	}
	sub := map[string]bool{
		string(opsv1.OperationHorizontalScaling): r.HorizontalScaling != nil,
		string(opsv1.OperationVerticalScaling):   r.VerticalScaling != nil,
		string(opsv1.OperationRestart):           r.Restart != nil,
	}
	fields := map[string]string{
		string(opsv1.OperationHorizontalScaling): "horizontal_scaling",
		string(opsv1.OperationVerticalScaling):   "vertical_scaling",
		string(opsv1.OperationRestart):           "restart",
	}
	for _, t := range opTypes {
		switch {
		case t == r.Type && !sub[t]:
			add(fields[t], "is required for type %s", t)
		case t != r.Type && sub[t]:
			add(fields[t], "is only valid with type %s", t)
		}
	}
	if h := r.HorizontalScaling; h != nil {
		if h.VMStorage == nil && h.VMInsert == nil && h.VMSelect == nil {
			add("horizontal_scaling", "needs at least one of vmstorage, vminsert, vmselect")
		}
		for name, n := range map[string]*int64{"vmstorage": h.VMStorage, "vminsert": h.VMInsert, "vmselect": h.VMSelect} {
			if n != nil && (*n < minReplicas || *n > maxReplicas) {
				add("horizontal_scaling."+name, "must be between %d and %d", minReplicas, maxReplicas)
			}
		}
	}
	if vs := r.VerticalScaling; vs != nil {
		if vs.VMStorage == nil && vs.VMInsert == nil && vs.VMSelect == nil {
			add("vertical_scaling", "needs at least one of vmstorage, vminsert, vmselect")
		}
		for _, name := range components {
			res := map[string]*Resources{"vmstorage": vs.VMStorage, "vminsert": vs.VMInsert, "vmselect": vs.VMSelect}[name]
			if res == nil {
				continue
			}
			field := "vertical_scaling." + name
			if len(res.Requests) == 0 && len(res.Limits) == 0 {
				add(field, "resources need requests or limits")
			}
			for kind, m := range map[string]map[string]string{"requests": res.Requests, "limits": res.Limits} {
				for k, q := range m {
					if k != "cpu" && k != "memory" {
						add(field+"."+kind, "only cpu and memory may be set")
						continue
					}
					if _, err := resource.ParseQuantity(q); err != nil {
						add(field+"."+kind+"."+k, "must be a quantity such as 500m or 1Gi")
					}
				}
			}
		}
	}
	if rs := r.Restart; rs != nil {
		if len(rs.Components) == 0 {
			add("restart.components", "needs at least one of vmstorage, vminsert, vmselect")
		}
		checkComponents(&v, "restart.components", rs.Components)
	}
	checkComponents(&v, "order", r.Order)
	if r.StepTimeout != "" {
		d, err := time.ParseDuration(r.StepTimeout)
		if err != nil || d < minStepTimeout || d > maxStepTimeout {
			add("step_timeout", "must be a duration between 1m and 6h, e.g. 15m")
		}
	}
	return v
}

func checkComponents(v *[]apierror.FieldViolation, field string, list []string) {
	seen := map[string]bool{}
	for i, c := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		switch {
		case !slices.Contains(components, c):
			*v = append(*v, apierror.Violation(f, "must be one of %s", strings.Join(components, ", ")))
		case seen[c]:
			*v = append(*v, apierror.Violation(f, "%s is listed twice", c))
		}
		seen[c] = true
	}
}

// ParseList validates the list query: page_size, page_token, type, phase.
func ParseList(q url.Values) (ListRequest, *apierror.Error) {
	size, after, violations := listing.SnakeCase.ParseCursor(q)
	req := ListRequest{PageSize: size, After: after, Type: q.Get("type"), Phase: q.Get("phase")}
	if req.Type != "" && !slices.Contains(opTypes, req.Type) {
		violations = append(violations, apierror.Violation("type", "must be one of %s", strings.Join(opTypes, ", ")))
	}
	if req.Phase != "" && !slices.Contains(phases, req.Phase) {
		violations = append(violations, apierror.Violation("phase", "must be one of %s", strings.Join(phases, ", ")))
	}
	if len(violations) > 0 {
		return ListRequest{}, apierror.InvalidArgument("the list request is invalid", violations...)
	}
	return req, nil
}

func (r ListRequest) filter() string { return r.Type + "/" + r.Phase }
