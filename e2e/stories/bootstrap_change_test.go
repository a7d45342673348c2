package stories

import (
	"context"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/stack"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// storyBootstrapChange, on the default declaration story 21 left (or
// declares):
// changing the vmagent component's values upgrades only its HelmRelease
// (the others keep their generation and Helm release revision); removing
// vmagent uninstalls it (HelmRelease and VMAgent gone); removing the
// vmcluster without allowDataRemoval is refused by the API server (the
// CRD's CEL rule) and changes nothing. At the end the vmcluster is removed
// with allowDataRemoval, leaving the stack as it started.
func storyBootstrapChange(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	t.Cleanup(func() { removeStackComponents(t, "vmagent", stackVMCluster) })
	// What story 21 leaves (declared here when this story runs alone).
	declareDefaultStack(t)
	before := map[string]releaseState{}
	for _, name := range []string{"vm-operator", stackVMCluster, "vmagent"} {
		before[name] = releaseOf(g, name)
	}

	// Upgrade vmagent only: a new scrape interval.
	g.Expect(updateStack(func(s *opsv1.ObservabilityStack) {
		for i := range s.Spec.Components {
			if s.Spec.Components[i].Name == "vmagent" {
				s.Spec.Components[i] = stack.VMAgentComponent(stackVMCluster, "7s")
			}
		}
	})).To(Succeed())
	vmagent := &unstructured.Unstructured{}
	vmagent.SetGroupVersionKind(schema.GroupVersionKind{Group: "operator.victoriametrics.com", Version: "v1beta1", Kind: "VMAgent"})
	g.Eventually(func(g Gomega) {
		now := releaseOf(g, "vmagent")
		g.Expect(now.generation).To(BeNumerically(">", before["vmagent"].generation))
		g.Expect(now.revision).To(BeNumerically(">", before["vmagent"].revision), "a Helm upgrade")
		g.Expect(helmReleaseReady(g, "vmagent")).NotTo(BeNil())
		g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Namespace: obs, Name: "vmagent"}, vmagent)).To(Succeed())
		interval, _, _ := unstructured.NestedString(vmagent.Object, "spec", "scrapeInterval")
		g.Expect(interval).To(Equal("7s"))
	}, 3*time.Minute, time.Second).Should(Succeed())
	for _, name := range []string{"vm-operator", stackVMCluster} {
		g.Expect(releaseOf(g, name)).To(Equal(before[name]), "%s is not upgraded", name)
	}

	// Remove vmagent: uninstalled.
	g.Expect(updateStack(func(s *opsv1.ObservabilityStack) {
		var keep []opsv1.StackComponent
		for _, c := range s.Spec.Components {
			if c.Name != "vmagent" {
				keep = append(keep, c)
			}
		}
		s.Spec.Components = keep
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := st.Env.Client.Get(ctx, client.ObjectKey{Namespace: obs, Name: "vmagent"}, &helmv2.HelmRelease{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "HelmRelease vmagent: %v", err)
		err = st.Env.Client.Get(ctx, client.ObjectKey{Namespace: obs, Name: "vmagent"}, vmagent)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "VMAgent vmagent: %v", err)
	}, 3*time.Minute, time.Second).Should(Succeed())

	// Remove the vmcluster without allowDataRemoval: refused, nothing
	// changes.
	err := updateStack(func(s *opsv1.ObservabilityStack) {
		var keep []opsv1.StackComponent
		for _, c := range s.Spec.Components {
			if c.Name != stackVMCluster {
				keep = append(keep, c)
			}
		}
		s.Spec.Components, s.Spec.AllowDataRemoval = keep, false
	})
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("removing a vmcluster component deletes its data: set allowDataRemoval to true to remove it"))
	s := getStack(g)
	g.Expect(s.Spec.Components).To(ContainElement(HaveField("Name", stackVMCluster)))
	g.Consistently(func(g Gomega) {
		g.Expect(helmReleaseReady(g, stackVMCluster)).NotTo(BeNil())
	}, 3*time.Second, time.Second).Should(Succeed())

	// Clean up: removed with the explicit flag (then reset).
	removeStackComponents(t, stackVMCluster)
	g.Eventually(func(g Gomega) {
		vmc := &unstructured.Unstructured{}
		vmc.SetGroupVersionKind(schema.GroupVersionKind{Group: "operator.victoriametrics.com", Version: "v1beta1", Kind: "VMCluster"})
		err := st.Env.Client.Get(ctx, client.ObjectKey{Namespace: obs, Name: stackVMCluster}, vmc)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "VMCluster vmcluster: %v", err)
	}, 3*time.Minute, time.Second).Should(Succeed())
}

// releaseState is what changes when helm-controller upgrades a release.
type releaseState struct {
	generation int64
	revision   int
}

func releaseOf(g Gomega, name string) releaseState {
	hr := &helmv2.HelmRelease{}
	g.Expect(st.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: obs, Name: name}, hr)).To(Succeed())
	out := releaseState{generation: hr.Generation}
	if latest := hr.Status.History.Latest(); latest != nil {
		out.revision = latest.Version
	}
	return out
}
