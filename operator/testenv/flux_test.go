package testenv_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/operator/pkg/chartrepo"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var (
	env  *testenv.Environment
	flux *testenv.Flux
)

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	flux, err = env.StartFlux(context.Background(), testenv.FluxOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, flux.Logs())
	}
	flux.Stop()
	_ = env.Stop()
	os.Exit(code)
}

func TestCRDsInstalled(t *testing.T) {
	g := NewWithT(t)
	for _, name := range []string{
		"helmreleases.helm.toolkit.fluxcd.io",
		"helmrepositories.source.toolkit.fluxcd.io",
		"helmcharts.source.toolkit.fluxcd.io",
		"ocirepositories.source.toolkit.fluxcd.io",
	} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd)).To(Succeed(), name)
	}
}

// TestFluxHelmReleaseLifecycle drives the real source-controller and
// helm-controller: a chart repository served by the test, a HelmRepository
// and a HelmRelease installed, upgraded with new values, and uninstalled.
func TestFluxHelmReleaseLifecycle(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)

	repo := chartrepo.New()
	_, err := repo.AddDir("testdata/charts/demo")
	g.Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(repo)
	defer srv.Close()

	hrepo := &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: ns},
		Spec: sourcev1.HelmRepositorySpec{
			URL:      srv.URL,
			Interval: metav1.Duration{Duration: time.Minute},
		},
	}
	g.Expect(env.Client.Create(ctx, hrepo)).To(Succeed())

	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "rt", Namespace: ns},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Minute},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart:     "demo",
				Version:   "0.1.0",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "demo"},
			}},
			Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"hi"}`)},
		},
	}
	g.Expect(env.Client.Create(ctx, hr)).To(Succeed())

	cm := &corev1.ConfigMap{}
	cmKey := client.ObjectKey{Namespace: ns, Name: "rt-settings"}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, cmKey, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hi"))
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), hr)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(hr.Status.Conditions, meta.ReadyCondition)).To(BeTrue(), "HelmRelease conditions: %+v", hr.Status.Conditions)
	}, 90*time.Second, 250*time.Millisecond).Should(Succeed(), flux.Logs)
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rt-svc"}, &corev1.Service{})).To(Succeed())

	// Change the values and ask for an immediate reconcile.
	patch := client.MergeFrom(hr.DeepCopy())
	hr.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"changed","replicas":3}`)}
	if hr.Annotations == nil {
		hr.Annotations = map[string]string{}
	}
	hr.Annotations[meta.ReconcileRequestAnnotation] = time.Now().Format(time.RFC3339Nano)
	g.Expect(env.Client.Patch(ctx, hr, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, cmKey, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "changed"))
		g.Expect(cm.Data).To(HaveKeyWithValue("replicas", "3"))
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), hr)).To(Succeed())
		g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation))
		g.Expect(apimeta.IsStatusConditionTrue(hr.Status.Conditions, meta.ReadyCondition)).To(BeTrue())
	}, 90*time.Second, 250*time.Millisecond).Should(Succeed(), flux.Logs)

	// Delete: helm-controller uninstalls, then removes its finalizer.
	g.Expect(env.Client.Delete(ctx, hr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), &helmv2.HelmRelease{}))).To(BeTrue())
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, cmKey, &corev1.ConfigMap{}))).To(BeTrue())
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rt-svc"}, &corev1.Service{}))).To(BeTrue())
	}, 60*time.Second, 250*time.Millisecond).Should(Succeed(), flux.Logs)
}
