package bootstrap_test

import (
	"context"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/controller/bootstrap"
)

const wait = 3 * time.Minute

func component(name, chart, version, values string, deps ...string) opsv1.StackComponent {
	c := opsv1.StackComponent{Name: name, Chart: chart, Version: version, DependsOn: deps}
	if values != "" {
		c.Values = &runtime.RawExtension{Raw: []byte(values)}
	}
	return c
}

func newStack(ns string, cs ...opsv1.StackComponent) *opsv1.ObservabilityStack {
	return &opsv1.ObservabilityStack{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns},
		Spec:       opsv1.ObservabilityStackSpec{Components: cs},
	}
}

// update changes the stack's spec with mutate, retrying conflicts.
func update(g Gomega, stack *opsv1.ObservabilityStack, mutate func(*opsv1.ObservabilityStack)) error {
	var err error
	for range 10 {
		cur := &opsv1.ObservabilityStack{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(stack), cur)).To(Succeed())
		mutate(cur)
		if err = env.Client.Update(context.Background(), cur); !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

func release(g Gomega, ns, name string) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, hr)).To(Succeed())
	return hr
}

func settingOf(g Gomega, ns, release string) string {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: release + "-settings"}, cm)).To(Succeed())
	return cm.Data["setting"]
}

func readyStack(g Gomega, stack *opsv1.ObservabilityStack) *opsv1.ObservabilityStack {
	cur := &opsv1.ObservabilityStack{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(stack), cur)).To(Succeed())
	g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
	g.Expect(apimeta.IsStatusConditionTrue(cur.Status.Conditions, opsv1.ReadyCondition)).To(BeTrue(), "conditions: %+v", cur.Status.Conditions)
	return cur
}

// TestStackInstallsInDependencyOrder: a declaration of three components
// chained by dependsOn becomes three HelmReleases that helm-controller
// installs in that order; the stack reports each component's version and
// Ready time. Changing one component's values, then another's chart
// version, upgrades only that component.
func TestStackInstallsInDependencyOrder(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	startOperator(t, ns)

	stack := newStack(ns,
		component("agent", "agent", "", `{"setting":"scrape"}`, "store"),
		component("store", "vmcluster", "", "", "base"),
		component("base", "base", "0.1.0", ""),
	)
	g.Expect(env.Client.Create(ctx, stack)).To(Succeed())

	var cur *opsv1.ObservabilityStack
	g.Eventually(func(g Gomega) { cur = readyStack(g, stack) }, wait, 250*time.Millisecond).Should(Succeed(), flux.Logs)

	byName := map[string]opsv1.ComponentStatus{}
	for _, c := range cur.Status.Components {
		byName[c.Name] = c
		g.Expect(c.Ready).To(Equal(metav1.ConditionTrue), c.Name)
		g.Expect(c.ReadyTime).NotTo(BeNil(), c.Name)
	}
	g.Expect(byName).To(HaveLen(3))
	g.Expect(byName["base"].Version).To(Equal("0.1.0"))
	g.Expect(byName["store"].Chart).To(Equal("vmcluster"))

	// Order: each HelmRelease was first installed no earlier than its
	// dependency became Ready (second resolution, as Kubernetes stores
	// times), and the dependencies are recorded on the HelmReleases.
	base, store, agent := release(g, ns, "base"), release(g, ns, "store"), release(g, ns, "agent")
	g.Expect(store.Spec.DependsOn).To(Equal([]meta.DependencyReference{{Name: "base"}}))
	g.Expect(agent.Spec.DependsOn).To(Equal([]meta.DependencyReference{{Name: "store"}}))
	readyAt := func(hr *helmv2.HelmRelease) time.Time {
		return apimeta.FindStatusCondition(hr.Status.Conditions, meta.ReadyCondition).LastTransitionTime.Time
	}
	installedAt := func(hr *helmv2.HelmRelease) time.Time { return hr.Status.History.Latest().FirstDeployed.Time }
	g.Expect(installedAt(store)).NotTo(BeTemporally("<", readyAt(base)))
	g.Expect(installedAt(agent)).NotTo(BeTemporally("<", readyAt(store)))
	g.Expect(settingOf(g, ns, "agent")).To(Equal("scrape"))

	// Values of one component: only that one is upgraded.
	g.Expect(update(g, stack, func(s *opsv1.ObservabilityStack) {
		s.Spec.Components[0].Values = &runtime.RawExtension{Raw: []byte(`{"setting":"changed"}`)}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(settingOf(g, ns, "agent")).To(Equal("changed"))
		g.Expect(release(g, ns, "agent").Status.History.Latest().Version).To(Equal(2))
		readyStack(g, stack)
	}, wait, 250*time.Millisecond).Should(Succeed(), flux.Logs)
	g.Expect(release(g, ns, "base").Status.History.Latest().Version).To(Equal(1))
	g.Expect(release(g, ns, "store").Status.History.Latest().Version).To(Equal(1))

	// Chart version of one component: only that one is upgraded, and the
	// stack reports the version running.
	g.Expect(update(g, stack, func(s *opsv1.ObservabilityStack) { s.Spec.Components[2].Version = "0.2.0" })).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur = readyStack(g, stack)
		g.Expect(cur.Status.Components).To(ContainElement(And(
			HaveField("Name", "base"), HaveField("Version", "0.2.0"), HaveField("Ready", metav1.ConditionTrue))))
	}, wait, 250*time.Millisecond).Should(Succeed(), flux.Logs)
	g.Expect(release(g, ns, "store").Status.History.Latest().Version).To(Equal(1))
	g.Expect(release(g, ns, "agent").Status.History.Latest().Version).To(Equal(2))
}

// TestRemovingComponents: removing a component uninstalls it; removing a
// vmcluster component is refused by the CRD without allowDataRemoval, and
// by ops-operator for a HelmRelease of the stack it finds undeclared (the
// same rule, for a declaration written before the rule or by hand); with
// allowDataRemoval both go through.
func TestRemovingComponents(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	startOperator(t, ns)

	stack := newStack(ns,
		component("base", "base", "0.1.0", ""),
		component("store", "vmcluster", "", "", "base"),
		component("agent", "agent", "", "", "store"),
	)
	g.Expect(env.Client.Create(ctx, stack)).To(Succeed())
	g.Eventually(func(g Gomega) { readyStack(g, stack) }, wait, 250*time.Millisecond).Should(Succeed(), flux.Logs)

	// Removing agent uninstalls it.
	g.Expect(update(g, stack, func(s *opsv1.ObservabilityStack) { s.Spec.Components = s.Spec.Components[:2] })).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "agent"}, &helmv2.HelmRelease{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "HelmRelease agent: %v", err)
		err = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "agent-settings"}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ConfigMap of agent: %v", err)
		readyStack(g, stack)
	}, wait, 250*time.Millisecond).Should(Succeed(), flux.Logs)

	// Removing the vmcluster is refused at admission, naming the flag.
	err := update(g, stack, func(s *opsv1.ObservabilityStack) { s.Spec.Components = s.Spec.Components[:1] })
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("set allowDataRemoval to true to remove it"))
	g.Expect(err.Error()).To(ContainSubstring("spec.components"))
	release(g, ns, "store")

	// A HelmRelease of the stack with chart vmcluster that the declaration
	// does not list is kept, and the stack says why.
	orphan := release(g, ns, "store").DeepCopy()
	orphan.ObjectMeta = metav1.ObjectMeta{Name: "old-store", Namespace: ns, Labels: map[string]string{
		bootstrap.LabelStack: "default", bootstrap.LabelComponent: "old-store"}}
	orphan.Spec.ReleaseName = "old-store"
	orphan.Spec.DependsOn = nil
	orphan.Status = helmv2.HelmReleaseStatus{}
	g.Expect(env.Client.Create(ctx, orphan)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := &opsv1.ObservabilityStack{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(stack), cur)).To(Succeed())
		ready := apimeta.FindStatusCondition(cur.Status.Conditions, opsv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(opsv1.RemovalRefusedReason))
		g.Expect(ready.Message).To(ContainSubstring("set allowDataRemoval to true"))
		g.Expect(cur.Status.Components).To(ContainElement(And(HaveField("Name", "old-store"), HaveField("Removed", true))))
		var evs eventsv1.EventList
		g.Expect(env.Client.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
		g.Expect(evs.Items).To(ContainElement(And(HaveField("Reason", opsv1.RemovalRefusedReason), HaveField("Type", corev1.EventTypeWarning))))
	}, wait, 250*time.Millisecond).Should(Succeed(), flux.Logs)
	g.Consistently(func(g Gomega) { release(g, ns, "old-store") }, 2*time.Second, 250*time.Millisecond).Should(Succeed())

	// With allowDataRemoval, both vmcluster components are uninstalled.
	g.Expect(update(g, stack, func(s *opsv1.ObservabilityStack) {
		s.Spec.AllowDataRemoval = true
		s.Spec.Components = s.Spec.Components[:1]
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, name := range []string{"store", "old-store"} {
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &helmv2.HelmRelease{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "HelmRelease %s: %v", name, err)
		}
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "store-settings"}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ConfigMap of store: %v", err)
		readyStack(g, stack)
	}, wait, 250*time.Millisecond).Should(Succeed(), flux.Logs)
}
