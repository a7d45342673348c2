package integration

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// shardLabels put an object applied directly into ops-server's Flux shard.
var shardLabels = map[string]string{opsv1.FluxShardLabel: opsv1.DefaultFluxShard}

// TestFluxShardsCoexist: a customer's Flux (a second source-controller and
// helm-controller, run with the customary
// --watch-label-selector=!sharding.fluxcd.io/key) watches the same
// namespace as ops-server's pair (sharding.fluxcd.io/key=ops-server). A
// vmcluster created through REST is reconciled by ours only, a HelmRelease
// committed without the key by theirs only: each HelmChart's artifact is
// served by its own source-controller, and neither controller's log ever
// names the other's objects.
func TestFluxShardsCoexist(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	theirs, err := env.StartFlux(ctx, testenv.FluxOptions{Namespace: ns, LabelSelector: "!" + opsv1.FluxShardLabel, Name: "flux-" + ns})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(theirs.Stop)
	s := startServer(t, ns, nil)

	// Names that appear nowhere else in the logs.
	const ourName, theirName = "sharded-vmc", "unsharded-release"
	created := s.create(map[string]any{"name": ourName, "values": map[string]any{}})
	repo := &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: theirName, Namespace: ns},
		Spec:       sourcev1.HelmRepositorySpec{URL: chartRepoURL, Interval: metav1.Duration{Duration: time.Minute}},
	}
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: theirName, Namespace: ns},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Minute},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: "vmcluster", Version: "0.1.0",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: theirName},
			}},
			Install: &helmv2.Install{DisableWait: true},
			Timeout: &metav1.Duration{Duration: time.Minute},
		},
	}
	g.Expect(env.Client.Create(ctx, hr)).To(Succeed())

	s.waitStatus(created.ID, vmclusters.StatusRunning)
	g.Eventually(func(g Gomega) {
		got := &helmv2.HelmRelease{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), got)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(got.Status.Conditions, meta.ReadyCondition)).To(BeTrue(), "%+v", got.Status.Conditions)
	}, fluxTimeout, poll).Should(Succeed(), theirs.Logs)

	// Our objects carry the shard label, the HelmChart too (through
	// spec.chart.metadata.labels), and our source-controller serves its
	// artifact; theirs come from their source-controller.
	for _, tc := range []struct {
		release, storage string
		labelled         bool
	}{{ourName, flux.StorageAddr, true}, {theirName, theirs.StorageAddr, false}} {
		ours := &helmv2.HelmRelease{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.release}, ours)).To(Succeed())
		src := &sourcev1.HelmRepository{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.release}, src)).To(Succeed())
		chart := &sourcev1.HelmChart{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ns + "-" + tc.release}, chart)).To(Succeed())
		for _, o := range []client.Object{ours, src, chart} {
			if tc.labelled {
				g.Expect(o.GetLabels()).To(HaveKeyWithValue(opsv1.FluxShardLabel, opsv1.DefaultFluxShard), "%T %s", o, o.GetName())
			} else {
				g.Expect(o.GetLabels()).NotTo(HaveKey(opsv1.FluxShardLabel), "%T %s", o, o.GetName())
			}
		}
		g.Expect(chart.Status.Artifact).NotTo(BeNil())
		u, err := url.Parse(chart.Status.Artifact.URL)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(u.Host).To(Equal(tc.storage), "the HelmChart of %s is served by the other source-controller", tc.release)
	}

	// Each controller saw only its own shard.
	logOf := func(p *testenv.Process) string {
		b, err := os.ReadFile(p.LogPath)
		g.Expect(err).NotTo(HaveOccurred())
		return string(b)
	}
	for _, tc := range []struct {
		who        string
		pair       *testenv.Flux
		own, other string
	}{{"ours", flux, ourName, theirName}, {"theirs", theirs, theirName, ourName}} {
		for _, p := range []*testenv.Process{tc.pair.Source, tc.pair.Helm} {
			log := logOf(p)
			g.Expect(strings.Contains(log, tc.other)).To(BeFalse(), "%s %s reconciled %s:\n%s", tc.who, p.Name, tc.other, log)
		}
		g.Expect(logOf(tc.pair.Helm)).To(ContainSubstring(tc.own), "%s helm-controller never logged its release", tc.who)
	}
}
