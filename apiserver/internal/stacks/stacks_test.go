package stacks

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func TestFromObject(t *testing.T) {
	readyAt := metav1.Now()
	cases := []struct {
		name string
		obj  opsv1.ObservabilityStack
		want Stack
	}{
		{name: "not reconciled yet",
			obj:  opsv1.ObservabilityStack{ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 1}},
			want: Stack{Name: "default", Ready: metav1.ConditionUnknown, Components: []opsv1.ComponentStatus{}}},
		{name: "ready, up to date",
			obj: opsv1.ObservabilityStack{
				ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 2},
				Spec:       opsv1.ObservabilityStackSpec{AllowDataRemoval: true},
				Status: opsv1.ObservabilityStackStatus{ObservedGeneration: 2,
					Conditions: []metav1.Condition{{Type: opsv1.ReadyCondition, Status: metav1.ConditionTrue, Reason: opsv1.SucceededReason, Message: "every component is Ready"}},
					Components: []opsv1.ComponentStatus{{Name: "vm-operator", Chart: "vm-operator", Ready: metav1.ConditionTrue, Version: "0.1.0", ReadyTime: &readyAt}}}},
			want: Stack{Name: "default", Ready: metav1.ConditionTrue, Reason: opsv1.SucceededReason, Message: "every component is Ready",
				UpToDate: true, AllowDataRemoval: true,
				Components: []opsv1.ComponentStatus{{Name: "vm-operator", Chart: "vm-operator", Ready: metav1.ConditionTrue, Version: "0.1.0", ReadyTime: &readyAt}}}},
		{name: "a newer declaration not applied yet",
			obj: opsv1.ObservabilityStack{
				ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 3},
				Status: opsv1.ObservabilityStackStatus{ObservedGeneration: 2,
					Conditions: []metav1.Condition{{Type: opsv1.ReadyCondition, Status: metav1.ConditionFalse, Reason: opsv1.RemovalRefusedReason, Message: "kept"}}}},
			want: Stack{Name: "default", Ready: metav1.ConditionFalse, Reason: opsv1.RemovalRefusedReason, Message: "kept", Components: []opsv1.ComponentStatus{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(FromObject(&tc.obj)).To(Equal(tc.want))
		})
	}
}

// TestListOnlyTheNamespace: the stacks of the configured namespace, by
// name; none is an empty list, not null.
func TestListOnlyTheNamespace(t *testing.T) {
	g := NewWithT(t)
	s := runtime.NewScheme()
	g.Expect(opsv1.AddToScheme(s)).To(Succeed())
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&opsv1.ObservabilityStack{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "observability"}},
		&opsv1.ObservabilityStack{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "observability"}},
		&opsv1.ObservabilityStack{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "elsewhere"}},
	).Build()
	out, err := (&Handler{Reader: c, Namespace: "observability"}).List(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Stacks).To(HaveLen(2))
	g.Expect(out.Stacks[0].Name).To(Equal("a"))
	g.Expect(out.Stacks[1].Name).To(Equal("b"))

	out, err = (&Handler{Reader: c, Namespace: "empty"}).List(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Stacks).NotTo(BeNil())
	g.Expect(out.Stacks).To(BeEmpty())
}
