package deploy

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/chartrepo"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// TestFluxSidecarsRunAsServiceAccount runs the real source-controller and
// helm-controller with the arguments the chart gives them and the
// identity of the chart's ops-server ServiceAccount (a kubeconfig with one
// of its tokens), against the chart's RBAC applied for real: they must
// start, install the vmcluster chart (deploy/charts/vmcluster) from a
// HelmRepository as ops-apiserver writes it, upgrade it, and uninstall it.
func TestFluxSidecarsRunAsServiceAccount(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	in := install(t, nil)
	ns := in.ns
	dir := t.TempDir()

	kubeconfig := serviceAccountKubeconfig(t, dir, ns, in.serverSA())
	dep := toDeployment(t, find(t, in.res.Objects, "Deployment", in.fullname))
	pod := dep.Spec.Template.Spec
	for _, c := range []string{"source-controller", "helm-controller"} {
		g.Expect(envVar(t, container(t, pod, c), "RUNTIME_NAMESPACE")).To(Equal("fieldRef:metadata.namespace"))
	}
	procEnv := []string{"KUBECONFIG=" + kubeconfig, "RUNTIME_NAMESPACE=" + ns}

	// The chart's arguments, with the Pod's addresses moved to free
	// 127.0.0.1 ports and the storage to a temporary directory.
	storage := filepath.Join(dir, "storage")
	g.Expect(os.MkdirAll(storage, 0o755)).To(Succeed())
	srcArgs, srcHealth := localArgs(t, container(t, pod, "source-controller").Args, storage)
	helmArgs, helmHealth := localArgs(t, container(t, pod, "helm-controller").Args, storage)
	src, err := testenv.StartProcess("source-controller", dir, srcArgs, procEnv)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = src.Stop(10 * time.Second) })
	helm, err := testenv.StartProcess("helm-controller", dir, helmArgs, procEnv)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = helm.Stop(10 * time.Second) })
	logs := func() string {
		return fmt.Sprintf("--- source-controller ---\n%s\n--- helm-controller ---\n%s", src.Log(3000), helm.Log(12000))
	}
	g.Expect(src.WaitHTTPOK(ctx, "http://"+srcHealth+"/readyz", time.Minute)).To(Succeed(), logs)
	g.Expect(helm.WaitHTTPOK(ctx, "http://"+helmHealth+"/readyz", time.Minute)).To(Succeed(), logs)

	// The vmcluster chart, served like ops-apiserver serves baked-in charts.
	repo := chartrepo.New()
	_, err = repo.AddDir(filepath.Join(root, "deploy", "charts", "vmcluster"))
	g.Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(repo)
	defer srv.Close()

	g.Expect(env.Client.Create(ctx, &sourcev1.HelmRepository{
		// The chart's Flux sidecars watch only ops-server's shard.
		ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: ns, Labels: opsv1.FluxShardLabels(opsv1.DefaultFluxShard, nil)},
		Spec:       sourcev1.HelmRepositorySpec{URL: srv.URL, Interval: metav1.Duration{Duration: time.Minute}},
	})).To(Succeed())
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: ns, Labels: opsv1.FluxShardLabels(opsv1.DefaultFluxShard, nil)},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Minute},
			Chart: &helmv2.HelmChartTemplate{ObjectMeta: &helmv2.HelmChartTemplateObjectMeta{Labels: opsv1.FluxShardLabels(opsv1.DefaultFluxShard, nil)}, Spec: helmv2.HelmChartTemplateSpec{
				Chart: "vmcluster", Version: "*",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "vm1"},
			}},
			// No VictoriaMetrics operator here: the VMCluster never reports
			// ready, so do not wait for it.
			Install: &helmv2.Install{DisableWait: true},
			Upgrade: &helmv2.Upgrade{DisableWait: true},
			Values:  &apiextensionsv1.JSON{Raw: []byte(`{"retentionPeriod":"3"}`)},
		},
	}
	g.Expect(env.Client.Create(ctx, hr)).To(Succeed())

	vmc := &unstructured.Unstructured{}
	vmc.SetAPIVersion("operator.victoriametrics.com/v1beta1")
	vmc.SetKind("VMCluster")
	vmcKey := client.ObjectKey{Namespace: ns, Name: "vm1"}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), hr)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(hr.Status.Conditions, meta.ReadyCondition)).To(BeTrue(), "HelmRelease conditions: %+v", hr.Status.Conditions)
		g.Expect(env.Client.Get(ctx, vmcKey, vmc)).To(Succeed())
		g.Expect(nestedString(vmc, "spec", "retentionPeriod")).To(Equal("3"))
	}, timeout, 250*time.Millisecond).Should(Succeed(), logs)

	// Upgrade with new values.
	patch := client.MergeFrom(hr.DeepCopy())
	hr.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"retentionPeriod":"7"}`)}
	hr.Annotations = map[string]string{meta.ReconcileRequestAnnotation: time.Now().Format(time.RFC3339Nano)}
	g.Expect(env.Client.Patch(ctx, hr, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, vmcKey, vmc)).To(Succeed())
		g.Expect(nestedString(vmc, "spec", "retentionPeriod")).To(Equal("7"))
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), hr)).To(Succeed())
		g.Expect(hr.Status.ObservedGeneration).To(Equal(hr.Generation))
		g.Expect(apimeta.IsStatusConditionTrue(hr.Status.Conditions, meta.ReadyCondition)).To(BeTrue())
	}, timeout, 250*time.Millisecond).Should(Succeed(), logs)

	// Uninstall: helm-controller deletes the VMCluster, its HelmChart and
	// its release Secrets, then its finalizer.
	g.Expect(env.Client.Delete(ctx, hr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), &helmv2.HelmRelease{}))).To(BeTrue())
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, vmcKey, vmc))).To(BeTrue())
		charts := &sourcev1.HelmChartList{}
		g.Expect(env.Client.List(ctx, charts, client.InNamespace(ns))).To(Succeed())
		g.Expect(charts.Items).To(BeEmpty())
	}, timeout, 250*time.Millisecond).Should(Succeed(), logs)

	// Neither controller was refused anything on the way.
	g.Expect(strings.ToLower(src.Log(1<<20))).NotTo(ContainSubstring("forbidden"), logs)
	g.Expect(strings.ToLower(helm.Log(1<<20))).NotTo(ContainSubstring("forbidden"), logs)
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates with a
// token of the ServiceAccount (TokenRequest), as a Pod running with it
// does; the Flux controllers read KUBECONFIG.
func serviceAccountKubeconfig(t *testing.T, dir, ns, sa string) string {
	t.Helper()
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := env.Client.SubResource("token").Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}}, tr); err != nil {
		t.Fatalf("requesting a token of %s/%s: %v", ns, sa, err)
	}
	cfg, err := clientcmd.LoadFromFile(env.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{sa: {Token: tr.Status.Token}}
	for _, c := range cfg.Contexts {
		c.AuthInfo = sa
	}
	path := filepath.Join(dir, "kubeconfig-"+sa)
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// localArgs rewrites a Flux container's arguments for a local process:
// every address on a free 127.0.0.1 port, the storage path to storage. It
// returns the arguments and the health address.
func localArgs(t *testing.T, args []string, storage string) ([]string, string) {
	t.Helper()
	out := make([]string, 0, len(args))
	health := ""
	storageAddr := ""
	for _, a := range args {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		switch name {
		case "storage-path":
			value = storage
		case "storage-addr", "storage-adv-addr":
			if storageAddr == "" {
				storageAddr = freeAddr(t)
			}
			value = storageAddr
		case "metrics-addr", "health-addr":
			value = freeAddr(t)
			if name == "health-addr" {
				health = value
			}
		case "enable-leader-election":
			// Outside a Pod controller-runtime cannot tell the Lease's
			// namespace (it reads the in-cluster namespace file; Flux has
			// no flag for it): one process needs no election here, and
			// TestLeaderElectionRBAC runs the election on the chart's
			// Leases as this ServiceAccount.
			value = "false"
		}
		out = append(out, "--"+name+"="+value)
	}
	if health == "" {
		t.Fatalf("no --health-addr in %v", args)
	}
	return out, health
}

func freeAddr(t *testing.T) string {
	t.Helper()
	p, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}
