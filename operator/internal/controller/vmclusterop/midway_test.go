package vmclusterop_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/vmstorage"
)

// hrValues returns the HelmRelease's values and generation.
func hrValues(g Gomega, ns string) (map[string]any, int64) {
	hr := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: vmcName}, hr)).To(Succeed())
	values := map[string]any{}
	g.Expect(json.Unmarshal(hr.Spec.Values.Raw, &values)).To(Succeed())
	return values, hr.Generation
}

// component returns values[c] as a map (empty when absent).
func component(values map[string]any, c string) map[string]any {
	m, _ := values[c].(map[string]any)
	if m == nil {
		return map[string]any{}
	}
	return m
}

// resizeOp resizes vmselect and vmstorage (planned in that order, vmselect
// holding no data).
func resizeOp(ns, name string) *opsv1.VMClusterOperation {
	return &opsv1.VMClusterOperation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: opsv1.VMClusterOperationSpec{VMCluster: opsv1.VMClusterReference{Name: vmcName}, Type: opsv1.OperationVerticalScaling,
			VerticalScaling: &opsv1.VerticalScaling{
				VMStorage: &opsv1.ComponentResources{Requests: map[string]resource.Quantity{"cpu": resource.MustParse("2"), "memory": resource.MustParse("4Gi")}},
				VMSelect:  &opsv1.ComponentResources{Limits: map[string]resource.Quantity{"memory": resource.MustParse("1Gi")}},
			}},
	}
}

var (
	storageResources = map[string]any{"requests": map[string]any{"cpu": "2", "memory": "4Gi"}}
	selectResources  = map[string]any{"limits": map[string]any{"memory": "1Gi"}}
)

// midwayCase is an operation of ≥ 2 steps and what the HelmRelease's
// values show after its first step only, and after all of them.
type midwayCase struct {
	name  string
	op    func(ns string) *opsv1.VMClusterOperation
	steps []string // "component action"
	first func(g Gomega, values map[string]any)
	all   func(g Gomega, values map[string]any)
	done  func(first opsv1.OperationStep) string // the first step, as the message's "done:" lists it
}

func midwayCases() []midwayCase {
	return []midwayCase{
		{
			name:  "HorizontalScaling",
			op:    func(ns string) *opsv1.VMClusterOperation { return scaleOp(ns, "op", 5, nil) },
			steps: []string{"vmstorage Scale", "vmstorage Scale"},
			first: func(g Gomega, v map[string]any) {
				g.Expect(component(v, "vmstorage")).To(HaveKeyWithValue("replicaCount", BeEquivalentTo(4)))
			},
			all: func(g Gomega, v map[string]any) {
				g.Expect(component(v, "vmstorage")).To(HaveKeyWithValue("replicaCount", BeEquivalentTo(5)))
			},
			done: func(opsv1.OperationStep) string { return "vmstorage 3→4" },
		},
		{
			name:  "VerticalScaling",
			op:    func(ns string) *opsv1.VMClusterOperation { return resizeOp(ns, "op") },
			steps: []string{"vmselect Resize", "vmstorage Resize"},
			first: func(g Gomega, v map[string]any) {
				g.Expect(component(v, "vmselect")).To(HaveKeyWithValue("resources", selectResources))
				g.Expect(component(v, "vmstorage")).NotTo(HaveKey("resources"))
			},
			all: func(g Gomega, v map[string]any) {
				g.Expect(component(v, "vmselect")).To(HaveKeyWithValue("resources", selectResources))
				g.Expect(component(v, "vmstorage")).To(HaveKeyWithValue("resources", storageResources))
			},
			done: func(s opsv1.OperationStep) string { return "vmselect resources " + s.To },
		},
	}
}

// startMidway creates the operation and runs ops-operator without Flux or
// the workload controllers: the first step writes its value and stays in
// flight (the HelmRelease never becomes Ready), the others Pending. It
// returns the operation and the HelmRelease's generation with the first
// step's value.
func startMidway(t *testing.T, tc midwayCase) (*cluster, *opsv1.VMClusterOperation, int64) {
	t.Helper()
	g := NewWithT(t)
	c := newCluster(t, 3, 2)
	op := tc.op(c.ns)
	g.Expect(env.Client.Create(context.Background(), op)).To(Succeed())
	startOperator(t, c.ns)
	var gen int64
	g.Eventually(func(g Gomega) {
		got := getOp(g, c.ns, op.Name)
		g.Expect(got.Status.Steps).To(HaveLen(len(tc.steps)))
		for i, s := range got.Status.Steps {
			g.Expect(string(s.Component) + " " + string(s.Action)).To(Equal(tc.steps[i]))
		}
		g.Expect(got.Status.Steps[0].Phase).To(Equal(opsv1.StepPhaseRunning))
		g.Expect(got.Status.Steps[0].HelmReleaseGeneration).NotTo(BeZero(), "the first step wrote its value")
		g.Expect(got.Status.Steps[0].Message).To(MatchRegexp("has no Ready condition yet|has not reconciled generation"), "it waits for Flux")
		g.Expect(got.Status.Steps[1:]).To(HaveEach(HaveField("Phase", opsv1.StepPhasePending)))
		gen = got.Status.Steps[0].HelmReleaseGeneration
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	values, hrGen := hrValues(g, c.ns)
	g.Expect(hrGen).To(Equal(gen))
	tc.first(g, values)
	return c, op, gen
}

func patchSpec(t *testing.T, op *opsv1.VMClusterOperation, spec string) {
	t.Helper()
	NewWithT(t).Expect(env.Client.Patch(context.Background(), op,
		client.RawPatch("application/merge-patch+json", []byte(`{"spec":`+spec+`}`)))).To(Succeed())
}

// Paused after step 1 of 2 of each type: the step in flight finishes, the
// next stays Pending and the HelmRelease shows the first step's value only;
// resumed, the operation finishes.
func TestPauseResumeMidway(t *testing.T) {
	for _, tc := range midwayCases() {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c, op, gen := startMidway(t, tc)
			patchSpec(t, op, `{"paused":true}`)
			// The step in flight is not interrupted.
			g.Eventually(func(g Gomega) {
				got := getOp(g, c.ns, op.Name)
				g.Expect(got.Status.Conditions).To(ContainElement(And(HaveField("Type", opsv1.ReadyCondition),
					HaveField("ObservedGeneration", got.Generation), HaveField("Reason", opsv1.ProgressingReason))), "the pause is seen")
				g.Expect(got.Status.Phase).To(Equal(opsv1.OperationPhaseRunning))
				g.Expect(got.Status.Steps[0].Phase).To(Equal(opsv1.StepPhaseRunning))
			}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
			c.play(t)
			var paused *opsv1.VMClusterOperation
			g.Eventually(func(g Gomega) {
				paused = getOp(g, c.ns, op.Name)
				g.Expect(paused.Status.Phase).To(Equal(opsv1.OperationPhasePaused), "status: %+v", paused.Status)
			}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
			g.Expect(paused.Status.Steps[0].Phase).To(Equal(opsv1.StepPhaseSucceeded))
			g.Expect(paused.Status.Steps[1:]).To(HaveEach(HaveField("Phase", opsv1.StepPhasePending)))
			g.Expect(paused.Status.Progress).To(Equal("1/2"))
			g.Expect(paused.Status.Conditions).To(ContainElement(And(HaveField("Type", opsv1.ReadyCondition),
				HaveField("Reason", opsv1.PausedReason), HaveField("Message", "Paused after 1/2 steps; set spec.paused to false to resume"))))
			values, hrGen := hrValues(g, c.ns)
			g.Expect(hrGen).To(Equal(gen), "no value written while paused")
			tc.first(g, values)

			patchSpec(t, op, `{"paused":false}`)
			var got *opsv1.VMClusterOperation
			g.Eventually(func(g Gomega) {
				got = getOp(g, c.ns, op.Name)
				g.Expect(got.Status.Phase).To(Equal(opsv1.OperationPhaseSucceeded), "status: %+v", got.Status)
			}, 60*time.Second, 50*time.Millisecond).Should(Succeed())
			g.Expect(got.Status.Steps).To(HaveEach(HaveField("Phase", opsv1.StepPhaseSucceeded)))
			g.Expect(got.Status.Steps[1].StartTime.Time).NotTo(BeTemporally("<", got.Status.Steps[0].CompletionTime.Time))
			g.Expect(got.Status.Conditions).To(ContainElement(And(HaveField("Type", opsv1.ReadyCondition),
				HaveField("Message", ContainSubstring("All 2 steps succeeded: "+tc.done(got.Status.Steps[0])+", ")))))
			values, hrGen = hrValues(g, c.ns)
			g.Expect(hrGen).To(Equal(got.Status.Steps[1].HelmReleaseGeneration))
			tc.all(g, values)
		})
	}
}

// Cancelled during step 1 of 2 of each type: the step in flight finishes
// (phase Cancelling until then), the rest is Skipped, the HelmRelease shows
// exactly the first step's value and the message says what was done.
func TestCancelMidway(t *testing.T) {
	for _, tc := range midwayCases() {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c, op, gen := startMidway(t, tc)
			patchSpec(t, op, `{"cancel":true}`)
			g.Eventually(func(g Gomega) {
				got := getOp(g, c.ns, op.Name)
				g.Expect(got.Status.Phase).To(Equal(opsv1.OperationPhaseCancelling), "status: %+v", got.Status)
				g.Expect(got.Status.Steps[0].Phase).To(Equal(opsv1.StepPhaseRunning))
			}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
			c.play(t)
			var got *opsv1.VMClusterOperation
			g.Eventually(func(g Gomega) {
				got = getOp(g, c.ns, op.Name)
				g.Expect(got.Status.Phase).To(Equal(opsv1.OperationPhaseCancelled), "status: %+v", got.Status)
			}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
			g.Expect(got.Status.Steps[0].Phase).To(Equal(opsv1.StepPhaseSucceeded))
			g.Expect(got.Status.Steps[1:]).To(HaveEach(HaveField("Phase", opsv1.StepPhaseSkipped)))
			g.Expect(got.Status.Progress).To(Equal("2/2"))
			g.Expect(got.Status.Conditions).To(ContainElement(And(HaveField("Type", opsv1.ReadyCondition),
				HaveField("Reason", opsv1.CancelledReason), HaveField("Message", "Cancelled on request; done: "+tc.done(got.Status.Steps[0])))))
			values, hrGen := hrValues(g, c.ns)
			g.Expect(hrGen).To(Equal(gen), "nothing written after the first step")
			tc.first(g, values)
		})
	}
}

// A VerticalScaling of two components changes their resources through the
// HelmRelease's values in the planned order (vmselect, holding no data,
// before vmstorage), each step only after the previous one converged.
func TestVerticalScalingInOrder(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t, 2, 1)
	op := resizeOp(c.ns, "resize")
	g.Expect(env.Client.Create(context.Background(), op)).To(Succeed())
	startOperator(t, c.ns)
	// Without Flux the first step waits: the second has not started and
	// the values hold the first step's resources only.
	g.Eventually(func(g Gomega) {
		got := getOp(g, c.ns, "resize")
		g.Expect(got.Status.Steps).To(HaveLen(2))
		g.Expect(got.Status.Steps[0].Component).To(Equal(opsv1.ComponentVMSelect))
		g.Expect(got.Status.Steps[0].Phase).To(Equal(opsv1.StepPhaseRunning))
		g.Expect(got.Status.Steps[0].HelmReleaseGeneration).NotTo(BeZero())
		g.Expect(got.Status.Steps[1].Component).To(Equal(opsv1.ComponentVMStorage))
		g.Expect(got.Status.Steps[1].Phase).To(Equal(opsv1.StepPhasePending))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	values, _ := hrValues(g, c.ns)
	g.Expect(component(values, "vmselect")).To(HaveKeyWithValue("resources", selectResources))
	g.Expect(component(values, "vmstorage")).NotTo(HaveKey("resources"))

	c.play(t)
	var got *opsv1.VMClusterOperation
	g.Eventually(func(g Gomega) {
		got = getOp(g, c.ns, "resize")
		g.Expect(got.Status.Phase).To(Equal(opsv1.OperationPhaseSucceeded), "status: %+v", got.Status)
	}, 60*time.Second, 50*time.Millisecond).Should(Succeed())
	s0, s1 := got.Status.Steps[0], got.Status.Steps[1]
	g.Expect(s1.StartTime.Time).NotTo(BeTemporally("<", s0.CompletionTime.Time), "vmstorage started before vmselect converged")
	g.Expect(s1.HelmReleaseGeneration).To(BeNumerically(">", s0.HelmReleaseGeneration))
	for _, s := range got.Status.Steps {
		g.Expect(s.Phase).To(Equal(opsv1.StepPhaseSucceeded))
		g.Expect(s.Message).To(ContainSubstring("Ready at generation"), "each step waited for the HelmRelease and the rollout")
	}
	values, _ = hrValues(g, c.ns)
	g.Expect(component(values, "vmselect")).To(HaveKeyWithValue("resources", selectResources))
	g.Expect(component(values, "vmstorage")).To(HaveKeyWithValue("resources", storageResources))
	g.Expect(component(values, "vmstorage")).To(HaveKeyWithValue("replicaCount", BeEquivalentTo(2)), "other values kept")
	// The VictoriaMetrics operator's view (the VMCluster spec, written by
	// play from the values) has both.
	vmc := vmstorage.NewVMCluster()
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: c.ns, Name: vmcName}, vmc)).To(Succeed())
	spec, _, _ := unstructured.NestedMap(vmc.Object, "spec")
	g.Expect(component(spec, "vmselect")).To(HaveKeyWithValue("resources", selectResources))
	g.Expect(component(spec, "vmstorage")).To(HaveKeyWithValue("resources", storageResources))
}
