package stories

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/stack"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// storyBootstrap: the stack started from a control plane without the
// VictoriaMetrics CRDs and bootstrapped itself with an ObservabilityStack
// holding the vm-operator component. Adding the rest of the default
// declaration (a vmcluster, then a vmagent) brings them up in that order
// (the HelmReleases' Ready times), and vmagent, backed by the real
// binary, scrapes the vmcluster's own components and writes to it: `up`
// at the vmcluster's select endpoint names vmstorage, vminsert and
// vmselect. Story 22 changes and removes what this one added.
func storyBootstrap(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	// Before: no VictoriaMetrics CRD at start; the operator and its CRDs
	// came from the vm-operator chart through helm-controller, and its Pod
	// is backed by bin/vm-operator.
	g.Expect(st.VMCRDsAbsentAtStart).To(BeTrue(), "the control plane started with the VictoriaMetrics CRDs")
	crd := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Name: stack.VMClusterCRD}, crd)).To(Succeed())
	operatorPods := &corev1.PodList{}
	g.Expect(st.Env.Client.List(ctx, operatorPods, client.InNamespace(obs), client.MatchingLabels{"app.kubernetes.io/name": "vm-operator"})).To(Succeed())
	g.Expect(operatorPods.Items).To(HaveLen(1))
	g.Expect(operatorPods.Items[0].Annotations).To(HaveKey(stack.PortsAnnotation), "the backer runs the operator's process")
	g.Expect(helmReleaseReady(g, "vm-operator")).NotTo(BeNil())

	// Story 22 goes on from here, and cleans up.
	t.Cleanup(func() {
		if t.Failed() {
			removeStackComponents(t, "vmagent", stackVMCluster)
		}
	})
	ready := declareDefaultStack(t)

	// In order: vm-operator, then vmcluster, then vmagent.
	g.Expect(ready["vm-operator"]).To(BeTemporally("<", ready[stackVMCluster]))
	// Ready times have a resolution of a second, and the vmcluster's
	// HelmRelease may become Ready a second before vmagent's: vmagent was
	// first deployed (Helm's release time) no earlier than the vmcluster
	// was Ready, as its dependsOn demands.
	g.Expect(ready[stackVMCluster]).NotTo(BeTemporally(">", ready["vmagent"]))
	agent := &helmv2.HelmRelease{}
	g.Expect(st.Env.Client.Get(ctx, client.ObjectKey{Namespace: obs, Name: "vmagent"}, agent)).To(Succeed())
	g.Expect(agent.Status.History).NotTo(BeEmpty())
	first := agent.Status.History[0].FirstDeployed
	for _, h := range agent.Status.History {
		if h.FirstDeployed.Before(&first) {
			first = h.FirstDeployed
		}
	}
	g.Expect(first.Time).NotTo(BeTemporally("<", ready[stackVMCluster]), "vmagent installed before the vmcluster was Ready")
	g.Eventually(func(g Gomega) {
		s := getStack(g)
		g.Expect(apimeta.IsStatusConditionTrue(s.Status.Conditions, opsv1.ReadyCondition)).To(BeTrue(), "%+v", s.Status)
	}, time.Minute, time.Second).Should(Succeed())

	// vmagent's up series of the vmcluster's components, read at the
	// vmcluster's select endpoint.
	query := st.ServicesURL() + "/" + obs + "/vmselect-" + stackVMCluster + "/select/0/prometheus/api/v1/query?" + url.Values{"query": {"up"}}.Encode()
	g.Eventually(func(g Gomega) {
		series := instantVector(g, query)
		jobs := map[string]bool{}
		for _, s := range series {
			g.Expect(s.Metric["instance"]).NotTo(BeEmpty(), "%v", s.Metric)
			for _, c := range []string{"vmstorage", "vminsert", "vmselect"} {
				// The VM operator's VMServiceScrape of a component is named
				// (and so is its job) <component>-<vmcluster>.
				if s.Metric["job"] == c+"-"+stackVMCluster && strings.Contains(s.Metric["pod"], c) && s.Value == "1" {
					jobs[c] = true
				}
			}
		}
		g.Expect(jobs).To(HaveLen(3), "up series: %v", series)
	}, 3*time.Minute, 2*time.Second).Should(Succeed())
}

// declareDefaultStack adds the vmcluster and vmagent components of the
// default declaration to the stack's ObservabilityStack (beside the
// vm-operator there) unless they are declared, waits until the three
// HelmReleases are Ready and returns when each became Ready.
func declareDefaultStack(t *testing.T) map[string]time.Time {
	t.Helper()
	g := NewWithT(t)
	g.Expect(updateStack(func(s *opsv1.ObservabilityStack) {
		for _, c := range []opsv1.StackComponent{stack.VMClusterComponent(stackVMCluster), stack.VMAgentComponent(stackVMCluster, "5s")} {
			if !declared(s, c.Name) {
				s.Spec.Components = append(s.Spec.Components, c)
			}
		}
	})).To(Succeed())
	ready := map[string]time.Time{}
	g.Eventually(func(g Gomega) {
		for _, name := range []string{"vm-operator", stackVMCluster, "vmagent"} {
			at := helmReleaseReady(g, name)
			g.Expect(at).NotTo(BeNil(), "HelmRelease %s is not Ready", name)
			ready[name] = at.Time
		}
	}, 6*time.Minute, 2*time.Second).Should(Succeed())
	return ready
}

func declared(s *opsv1.ObservabilityStack, name string) bool {
	for _, c := range s.Spec.Components {
		if c.Name == name {
			return true
		}
	}
	return false
}

// stackVMCluster is the vmcluster component stories 21 and 22 declare:
// not "vmcluster", the vmcluster earlier stories create through the REST
// API (a HelmRelease of that name would be a conflict).
const stackVMCluster = "stack-metrics"

// helmReleaseReady returns when HelmRelease name became Ready, nil while
// it is not Ready.
func helmReleaseReady(g Gomega, name string) *metav1.Time {
	hr := &helmv2.HelmRelease{}
	g.Expect(st.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: obs, Name: name}, hr)).To(Succeed())
	c := apimeta.FindStatusCondition(hr.Status.Conditions, "Ready")
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != hr.Generation {
		return nil
	}
	return &c.LastTransitionTime
}

func getStack(g Gomega) *opsv1.ObservabilityStack {
	s := &opsv1.ObservabilityStack{}
	g.Expect(st.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: obs, Name: stack.StackName}, s)).To(Succeed())
	return s
}

// updateStack changes the stack's declaration (ops-operator writes its
// status meanwhile: retried on conflicts).
func updateStack(change func(*opsv1.ObservabilityStack)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &opsv1.ObservabilityStack{}
		if err := st.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: obs, Name: stack.StackName}, s); err != nil {
			return err
		}
		change(s)
		return st.Env.Client.Update(context.Background(), s)
	})
}

// removeStackComponents removes components from the declaration (with
// allowDataRemoval for a vmcluster, reset afterwards) and waits until
// their HelmReleases are gone, so that later stories run on the stack as
// it started.
func removeStackComponents(t *testing.T, names ...string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(updateStack(func(s *opsv1.ObservabilityStack) {
		var keep []opsv1.StackComponent
		for _, c := range s.Spec.Components {
			if !contains(names, c.Name) {
				keep = append(keep, c)
			}
		}
		s.Spec.Components, s.Spec.AllowDataRemoval = keep, true
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, name := range names {
			err := st.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: obs, Name: name}, &helmv2.HelmRelease{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "HelmRelease %s: %v", name, err)
		}
	}, 3*time.Minute, time.Second).Should(Succeed())
	g.Expect(updateStack(func(s *opsv1.ObservabilityStack) { s.Spec.AllowDataRemoval = false })).To(Succeed())
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

type promSample struct {
	Metric map[string]string
	Value  string
}

// instantVector runs an instant query and returns its samples.
func instantVector(g Gomega, query string) []promSample {
	resp, err := http.Get(query)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(json.NewDecoder(resp.Body).Decode(&body)).To(Succeed())
	g.Expect(body.Status).To(Equal("success"))
	out := make([]promSample, 0, len(body.Data.Result))
	for _, r := range body.Data.Result {
		s := promSample{Metric: r.Metric}
		if len(r.Value) == 2 {
			s.Value = fmt.Sprint(r.Value[1])
		}
		out = append(out, s)
	}
	return out
}
