package vmclusterop

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Current is what the plan starts from: the VMCluster as the VictoriaMetrics
// operator sees it (its spec) and the Pods of each component.
type Current struct {
	// Replicas is each component's replica count.
	Replicas map[opsv1.VMClusterComponent]int32
	// Resources is each component's resources as JSON ("{}" when none).
	Resources map[opsv1.VMClusterComponent]string
	// Pods are the names of each component's Pods, sorted.
	Pods map[opsv1.VMClusterComponent][]string
	// ReplicationFactor is the VMCluster's replicationFactor (1 when unset).
	ReplicationFactor int32
}

// Default orders (docs/operations.md, "Step order"). Scaling vmstorage up
// goes first so that vminsert has somewhere to spread new data before it
// grows; scaling it down goes last, after the stateless components took
// their share of the change, one replica at a time. Resizes and restarts
// touch the stateless components first: a bad value shows on a component
// that holds no data.
var (
	orderStorageFirst = []opsv1.VMClusterComponent{opsv1.ComponentVMStorage, opsv1.ComponentVMInsert, opsv1.ComponentVMSelect}
	orderStorageLast  = []opsv1.VMClusterComponent{opsv1.ComponentVMInsert, opsv1.ComponentVMSelect, opsv1.ComponentVMStorage}
	orderStateless    = []opsv1.VMClusterComponent{opsv1.ComponentVMSelect, opsv1.ComponentVMInsert, opsv1.ComponentVMStorage}
)

// DefaultOrder is the order of the components of spec when spec.order is
// omitted.
func DefaultOrder(spec *opsv1.VMClusterOperationSpec, cur Current) []opsv1.VMClusterComponent {
	if spec.Type == opsv1.OperationHorizontalScaling {
		if t := spec.HorizontalScaling.Replicas(opsv1.ComponentVMStorage); t != nil && *t < cur.Replicas[opsv1.ComponentVMStorage] {
			return orderStorageLast
		}
		return orderStorageFirst
	}
	return orderStateless
}

// order is spec.order, followed by the components it leaves out in the
// default order.
func order(spec *opsv1.VMClusterOperationSpec, cur Current) []opsv1.VMClusterComponent {
	out := make([]opsv1.VMClusterComponent, 0, len(opsv1.Components))
	for _, c := range spec.Order {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	for _, c := range DefaultOrder(spec, cur) {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// Plan returns the ordered steps of an operation, all Pending. It is pure:
// the same spec and Current give the same steps. Components already at
// their target get no step; an empty plan means nothing to change.
//
//   - HorizontalScaling: vmstorage changes one replica per step (each
//     waited for), vminsert and vmselect in one step each.
//   - VerticalScaling: one Resize step per component.
//   - Restart: one RestartPod step per Pod, in name order.
func Plan(spec *opsv1.VMClusterOperationSpec, cur Current) []opsv1.OperationStep {
	var steps []opsv1.OperationStep
	add := func(c opsv1.VMClusterComponent, a opsv1.OperationAction, from, to, pod string) {
		steps = append(steps, opsv1.OperationStep{
			Component: c, Action: a, From: from, To: to, Pod: pod, Phase: opsv1.StepPhasePending,
		})
	}
	for _, c := range order(spec, cur) {
		switch spec.Type {
		case opsv1.OperationHorizontalScaling:
			t := spec.HorizontalScaling.Replicas(c)
			if t == nil {
				continue
			}
			from, to := cur.Replicas[c], *t
			if c != opsv1.ComponentVMStorage {
				if from != to {
					add(c, opsv1.ActionScale, itoa(from), itoa(to), "")
				}
				continue
			}
			for n := from; n != to; {
				next := n + 1
				if to < n {
					next = n - 1
				}
				add(c, opsv1.ActionScale, itoa(n), itoa(next), "")
				n = next
			}
		case opsv1.OperationVerticalScaling:
			r := spec.VerticalScaling.Resources(c)
			if r == nil {
				continue
			}
			to := ResourcesJSON(r)
			from := cur.Resources[c]
			if from == "" {
				from = "{}"
			}
			if from != to {
				add(c, opsv1.ActionResize, from, to, "")
			}
		case opsv1.OperationRestart:
			if !slices.Contains(spec.Restart.Components, c) {
				continue
			}
			for _, p := range cur.Pods[c] {
				add(c, opsv1.ActionRestartPod, "", "", p)
			}
		}
	}
	width := len(strconv.Itoa(len(steps)))
	width = max(width, 2)
	for i := range steps {
		steps[i].ID = fmt.Sprintf("%0*d-%s-%s", width, i+1, steps[i].Component, steps[i].Action)
	}
	return steps
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// ResourcesJSON is the canonical JSON of resources as the vmcluster chart
// takes them ({"limits":{...},"requests":{...}}, keys sorted, quantities
// canonical), the form From and To of a Resize step use.
func ResourcesJSON(r *opsv1.ComponentResources) string {
	out := map[string]map[string]string{}
	for name, m := range map[string]map[string]resource.Quantity{"requests": r.Requests, "limits": r.Limits} {
		if len(m) == 0 {
			continue
		}
		out[name] = map[string]string{}
		for k, q := range m {
			out[name][k] = q.String()
		}
	}
	b, _ := json.Marshal(out)
	return string(b)
}
