package vmclusterop

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func cur3() Current {
	return Current{
		Replicas: map[opsv1.VMClusterComponent]int32{opsv1.ComponentVMStorage: 3, opsv1.ComponentVMInsert: 1, opsv1.ComponentVMSelect: 1},
		Resources: map[opsv1.VMClusterComponent]string{
			opsv1.ComponentVMStorage: "{}", opsv1.ComponentVMInsert: `{"requests":{"cpu":"100m"}}`, opsv1.ComponentVMSelect: "{}",
		},
		Pods: map[opsv1.VMClusterComponent][]string{
			opsv1.ComponentVMStorage: {"vmstorage-vm-0", "vmstorage-vm-1", "vmstorage-vm-2"},
			opsv1.ComponentVMInsert:  {"vminsert-vm-abc"},
			opsv1.ComponentVMSelect:  {"vmselect-vm-0"},
		},
		ReplicationFactor: 2,
	}
}

// summary renders steps as "id component action from>to pod" lines.
func summary(steps []opsv1.OperationStep) []string {
	out := make([]string, 0, len(steps))
	for _, s := range steps {
		line := s.ID + " " + string(s.Component) + " " + string(s.Action)
		if s.From != "" || s.To != "" {
			line += " " + s.From + ">" + s.To
		}
		if s.Pod != "" {
			line += " " + s.Pod
		}
		out = append(out, line)
	}
	return out
}

func TestPlan(t *testing.T) {
	h := func(st, ins, sel *int32) *opsv1.VMClusterOperationSpec {
		return &opsv1.VMClusterOperationSpec{Type: opsv1.OperationHorizontalScaling,
			HorizontalScaling: &opsv1.HorizontalScaling{VMStorage: st, VMInsert: ins, VMSelect: sel}}
	}
	withOrder := func(s *opsv1.VMClusterOperationSpec, o ...opsv1.VMClusterComponent) *opsv1.VMClusterOperationSpec {
		s.Order = o
		return s
	}
	cases := []struct {
		name string
		spec *opsv1.VMClusterOperationSpec
		want []string
	}{
		{"scale up: vmstorage first, one replica per step, then vminsert and vmselect",
			h(ptr.To[int32](5), ptr.To[int32](2), ptr.To[int32](3)),
			[]string{"01-vmstorage-Scale vmstorage Scale 3>4", "02-vmstorage-Scale vmstorage Scale 4>5",
				"03-vminsert-Scale vminsert Scale 1>2", "04-vmselect-Scale vmselect Scale 1>3"}},
		{"scale down: vminsert and vmselect first, then vmstorage one replica at a time",
			h(ptr.To[int32](1), ptr.To[int32](2), nil),
			[]string{"01-vminsert-Scale vminsert Scale 1>2", "02-vmstorage-Scale vmstorage Scale 3>2", "03-vmstorage-Scale vmstorage Scale 2>1"}},
		{"an explicit order wins; unlisted components follow in the default order",
			withOrder(h(ptr.To[int32](4), ptr.To[int32](2), ptr.To[int32](2)), opsv1.ComponentVMSelect),
			[]string{"01-vmselect-Scale vmselect Scale 1>2", "02-vmstorage-Scale vmstorage Scale 3>4", "03-vminsert-Scale vminsert Scale 1>2"}},
		{"components at their target get no step",
			h(ptr.To[int32](3), ptr.To[int32](1), ptr.To[int32](2)),
			[]string{"01-vmselect-Scale vmselect Scale 1>2"}},
		{"nothing to change: no step", h(ptr.To[int32](3), nil, nil), []string{}},
		{"vertical scaling: vmselect, vminsert, then vmstorage; unchanged resources skipped",
			&opsv1.VMClusterOperationSpec{Type: opsv1.OperationVerticalScaling, VerticalScaling: &opsv1.VerticalScaling{
				VMStorage: &opsv1.ComponentResources{Requests: map[string]resource.Quantity{"memory": resource.MustParse("1Gi")}},
				VMInsert:  &opsv1.ComponentResources{Requests: map[string]resource.Quantity{"cpu": resource.MustParse("0.1")}},
				VMSelect:  &opsv1.ComponentResources{Limits: map[string]resource.Quantity{"cpu": resource.MustParse("1")}},
			}},
			[]string{`01-vmselect-Resize vmselect Resize {}>{"limits":{"cpu":"1"}}`, `02-vmstorage-Resize vmstorage Resize {}>{"requests":{"memory":"1Gi"}}`}},
		{"restart: one step per Pod, stateless components first",
			&opsv1.VMClusterOperationSpec{Type: opsv1.OperationRestart, Restart: &opsv1.Restart{Components: []opsv1.VMClusterComponent{opsv1.ComponentVMStorage, opsv1.ComponentVMSelect}}},
			[]string{"01-vmselect-RestartPod vmselect RestartPod vmselect-vm-0", "02-vmstorage-RestartPod vmstorage RestartPod vmstorage-vm-0",
				"03-vmstorage-RestartPod vmstorage RestartPod vmstorage-vm-1", "04-vmstorage-RestartPod vmstorage RestartPod vmstorage-vm-2"}},
		{"restart with an explicit order",
			withOrder(&opsv1.VMClusterOperationSpec{Type: opsv1.OperationRestart, Restart: &opsv1.Restart{Components: []opsv1.VMClusterComponent{opsv1.ComponentVMInsert, opsv1.ComponentVMStorage}}},
				opsv1.ComponentVMStorage),
			[]string{"01-vmstorage-RestartPod vmstorage RestartPod vmstorage-vm-0", "02-vmstorage-RestartPod vmstorage RestartPod vmstorage-vm-1",
				"03-vmstorage-RestartPod vmstorage RestartPod vmstorage-vm-2", "04-vminsert-RestartPod vminsert RestartPod vminsert-vm-abc"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			steps := Plan(tc.spec, cur3())
			g.Expect(summary(steps)).To(Equal(tc.want))
			for _, s := range steps {
				g.Expect(s.Phase).To(Equal(opsv1.StepPhasePending))
			}
			g.Expect(summary(Plan(tc.spec, cur3()))).To(Equal(tc.want), "Plan is deterministic")
		})
	}
}

func TestPlanIDsStayUniqueAndOrdered(t *testing.T) {
	g := NewWithT(t)
	cur := cur3()
	cur.Replicas[opsv1.ComponentVMStorage] = 1
	steps := Plan(&opsv1.VMClusterOperationSpec{Type: opsv1.OperationHorizontalScaling,
		HorizontalScaling: &opsv1.HorizontalScaling{VMStorage: ptr.To[int32](100)}}, cur)
	g.Expect(steps).To(HaveLen(99))
	g.Expect(steps[0].ID).To(Equal("01-vmstorage-Scale"))
	g.Expect(steps[98].ID).To(Equal("99-vmstorage-Scale"))
	for i := 1; i < len(steps); i++ {
		g.Expect(strings.Compare(steps[i-1].ID, steps[i].ID)).To(Equal(-1))
	}
}

func TestCanonicalResources(t *testing.T) {
	g := NewWithT(t)
	g.Expect(CanonicalResources(map[string]any{"requests": map[string]any{"cpu": "0.1", "memory": "1Gi", "ephemeral-storage": 1e9}})).
		To(Equal(`{"requests":{"cpu":"100m","ephemeral-storage":"1G","memory":"1Gi"}}`))
	g.Expect(CanonicalResources(nil)).To(Equal("{}"))
	g.Expect(ResourcesJSON(&opsv1.ComponentResources{Requests: map[string]resource.Quantity{"cpu": resource.MustParse("100m")}})).
		To(Equal(`{"requests":{"cpu":"100m"}}`))
}
