package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// StackName is the ObservabilityStack the local stack bootstraps itself
// with (in Namespace).
const StackName = "default"

// StackLabel is the label ops-operator puts on the HelmReleases and the
// HelmRepository of an ObservabilityStack (its name).
const StackLabel = "ops.observability.tidbcloud.com/stack"

// NotStack selects what no ObservabilityStack manages: deleting "every
// HelmRelease" with it (the benchmarks) keeps the stack's VictoriaMetrics
// operator.
func NotStack() client.MatchingLabelsSelector {
	sel, err := labels.Parse("!" + StackLabel)
	if err != nil {
		panic(err) // a constant, valid label key
	}
	return client.MatchingLabelsSelector{Selector: sel}
}

// VMClusterCRD is the CRD the VictoriaMetrics operator's chart installs;
// the local stack's control plane starts without it (and without every
// other CRD of operator.victoriametrics.com).
const VMClusterCRD = "vmclusters.operator.victoriametrics.com"

// vmCRDFiles are the files of crds/ the control plane is started without:
// the vm-operator chart installs the VictoriaMetrics CRDs.
var vmCRDFiles = []string{"operator.victoriametrics.com_vmclusters.yaml"}

// VMOperatorComponent is the VictoriaMetrics operator in the stack's
// declaration: its Pod is backed by bin/vm-operator (see backer.go), with
// quick readiness waits (simulated Pods are Ready within seconds).
func VMOperatorComponent() opsv1.StackComponent {
	return opsv1.StackComponent{Name: "vm-operator", Chart: "vm-operator", Values: rawValues(map[string]any{
		"env": map[string]string{
			"VM_PODWAITREADYTIMEOUT":       "30s",
			"VM_APPREADYTIMEOUT":           "60s",
			"VM_PODWAITREADYINTERVALCHECK": "1s",
		},
	})}
}

// VMClusterComponent is the default stack's vmcluster (component, and so
// HelmRelease and VMCluster, name), small enough for the local stack: one
// vmstorage, vminsert and vmselect.
func VMClusterComponent(name string) opsv1.StackComponent {
	return opsv1.StackComponent{Name: name, Chart: "vmcluster", DependsOn: []string{"vm-operator"}, Values: rawValues(map[string]any{
		"vmstorage": map[string]any{"replicaCount": 1},
	})}
}

// VMAgentComponent is the default stack's vmagent: it scrapes the
// components of vmcluster (the component's name) every scrapeInterval and
// writes to its vminsert.
func VMAgentComponent(vmcluster, scrapeInterval string) opsv1.StackComponent {
	return opsv1.StackComponent{Name: "vmagent", Chart: "vmagent", DependsOn: []string{vmcluster}, Values: rawValues(map[string]any{
		"vmcluster": vmcluster, "scrapeInterval": scrapeInterval,
	})}
}

// DevVMCluster is the vmcluster of the declaration `make dev` applies;
// not "vmcluster", the name docs/quickstart.md creates through the REST
// API.
const DevVMCluster = "metrics"

// DefaultComponents is the full default declaration `make dev` applies:
// the VictoriaMetrics operator, a vmcluster and a vmagent scraping it, in
// that order (as deploy/charts/ops-server/examples/values-bootstrap.yaml).
func DefaultComponents() []opsv1.StackComponent {
	return []opsv1.StackComponent{VMOperatorComponent(), VMClusterComponent(DevVMCluster), VMAgentComponent(DevVMCluster, "10s")}
}

func rawValues(v map[string]any) *runtime.RawExtension {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings and numbers always marshal
	}
	return &runtime.RawExtension{Raw: b}
}

// recordVMCRDs notes whether the control plane started without the
// VictoriaMetrics CRDs (VMCRDsAbsentAtStart).
func (s *Stack) recordVMCRDs(ctx context.Context) error {
	err := s.Env.Client.Get(ctx, types.NamespacedName{Name: VMClusterCRD}, &apiextensionsv1.CustomResourceDefinition{})
	switch {
	case apierrors.IsNotFound(err):
		s.VMCRDsAbsentAtStart = true
	case err != nil:
		return err
	}
	return nil
}

// Bootstrap creates the stack's ObservabilityStack (StackName) with
// components and waits until its vm-operator component is Ready: the
// VictoriaMetrics operator was installed by helm-controller from the
// vm-operator chart, its CRDs with it, and the backer runs it. A stack
// started again on its state keeps the declaration it has (changes made
// to it meanwhile are the user's).
func (s *Stack) Bootstrap(ctx context.Context, components []opsv1.StackComponent) error {
	cur := &opsv1.ObservabilityStack{}
	err := s.Env.Client.Get(ctx, types.NamespacedName{Namespace: Namespace, Name: StackName}, cur)
	switch {
	case apierrors.IsNotFound(err):
		cur = &opsv1.ObservabilityStack{
			ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: StackName},
			Spec:       opsv1.ObservabilityStackSpec{Components: components},
		}
		if err := s.Env.Client.Create(ctx, cur); err != nil {
			return fmt.Errorf("creating ObservabilityStack %s/%s: %w", Namespace, StackName, err)
		}
	case err != nil:
		return err
	}
	if !hasComponent(cur.Spec.Components, "vm-operator") {
		return nil
	}
	return s.WaitComponentReady(ctx, "vm-operator", 5*time.Minute)
}

func hasComponent(cs []opsv1.StackComponent, name string) bool {
	for _, c := range cs {
		if c.Name == name {
			return true
		}
	}
	return false
}

// WaitComponentReady waits until the stack's status says the component is
// Ready.
func (s *Stack) WaitComponentReady(ctx context.Context, name string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := "no status yet"
	for {
		st := &opsv1.ObservabilityStack{}
		if err := s.Env.Client.Get(ctx, types.NamespacedName{Namespace: Namespace, Name: StackName}, st); err == nil {
			for _, c := range st.Status.Components {
				if c.Name != name {
					continue
				}
				if c.Ready == metav1.ConditionTrue {
					return nil
				}
				last = c.Message
			}
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("component %s of ObservabilityStack %s/%s is not Ready: %s", name, Namespace, StackName, last)
		case <-time.After(time.Second):
		}
	}
}
