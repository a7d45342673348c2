package integration

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// injection is the reproduction of issue #18: newlines in integers that,
// unquoted, added serviceAccountName and hostNetwork to the VMCluster.
const injection = `{"replicationFactor":"1\n  serviceAccountName: ops-operator","vmselect":{"replicaCount":"1\nhostNetwork: true"}}`

func vmCluster(g Gomega, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "operator.victoriametrics.com", Version: "v1beta1", Kind: "VMCluster"})
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)).To(Succeed())
	return u
}

// TestBakedInChartValues installs the baked-in chart through the real
// Flux controllers (Helm inside helm-controller): the default values give
// vmstorage a 10Gi PersistentVolumeClaim; the injection is a 400
// on the REST API and, applied directly as a HelmRelease (kubectl,
// GitOps), refused by Helm's own check of the same schema, with no
// VMCluster rendered.
func TestBakedInChartValues(t *testing.T) {
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	s := startServer(t, ns, func(c *config.Config) {
		c.Chart.Repository = ""
		c.Chart.Version = ""
		c.Chart.LocalDir = filepath.Join(root, "deploy", "charts", "vmcluster")
	})

	// REST: the default values install, with a PersistentVolumeClaim.
	created := s.create(map[string]any{"name": "persistent", "values": map[string]any{}})
	s.waitStatus(created.ID, vmclusters.StatusRunning)
	vmc := vmCluster(g, ns, "persistent")
	size, _, _ := unstructured.NestedString(vmc.Object, "spec", "vmstorage", "storage", "volumeClaimTemplate", "spec", "resources", "requests", "storage")
	g.Expect(size).To(Equal("10Gi"))
	_, hasEmptyDir, _ := unstructured.NestedMap(vmc.Object, "spec", "vmstorage", "storage", "emptyDir")
	g.Expect(hasEmptyDir).To(BeFalse())

	// REST: the injection is a 400 on POST and PUT.
	code, b := s.do(http.MethodPost, vmclusters.BasePath, []byte(`{"name":"injected","values":`+injection+`}`))
	g.Expect(code).To(Equal(http.StatusBadRequest), string(b))
	g.Expect(violations(t, b)).To(ConsistOf("values.replicationFactor", "values.vmselect.replicaCount"))
	code, b = s.do(http.MethodPut, itemPath("persistent"), []byte(`{"values":`+injection+`}`))
	g.Expect(code).To(Equal(http.StatusBadRequest), string(b))

	// GitOps: the same values in a HelmRelease applied directly.
	ctx := context.Background()
	repo := &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "gitops", Namespace: ns, Labels: shardLabels},
		Spec:       sourcev1.HelmRepositorySpec{URL: s.app.LocalRepositoryURL(), Interval: metav1.Duration{Duration: time.Minute}},
	}
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "gitops", Namespace: ns, Labels: shardLabels},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Minute},
			Chart: &helmv2.HelmChartTemplate{ObjectMeta: &helmv2.HelmChartTemplateObjectMeta{Labels: shardLabels}, Spec: helmv2.HelmChartTemplateSpec{
				Chart:     "vmcluster",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "gitops"},
			}},
			Install: &helmv2.Install{DisableWait: true, Remediation: &helmv2.InstallRemediation{Retries: 0}},
			Timeout: &metav1.Duration{Duration: time.Minute},
			Values:  &apiextensionsv1.JSON{Raw: []byte(injection)},
		},
	}
	g.Expect(env.Client.Create(ctx, hr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &helmv2.HelmRelease{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), got)).To(Succeed())
		ready := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Message).To(ContainSubstring("schema"))
		g.Expect(ready.Message).To(ContainSubstring("replicationFactor"))
	}, fluxTimeout, poll).Should(Succeed())
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "operator.victoriametrics.com", Version: "v1beta1", Kind: "VMCluster"})
	err = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gitops"}, u)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no VMCluster is rendered from refused values: %v", err)
}
