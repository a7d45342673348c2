// Package watch tests the watch streams (?watch=true) of ops-apiserver on
// a real kube-apiserver, through the Go client of apiserver/pkg/client/watch:
// the initial state and SYNCED, one event per change, deletions, and a
// client following an upgrade's phases across a restart of ops-apiserver.
// No operator runs: the tests write the objects and their status.
package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/app"
	"github.com/tidbcloud/ops-server/apiserver/internal/auth"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	clientwatch "github.com/tidbcloud/ops-server/apiserver/pkg/client/watch"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.RunMain(m, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{opsv1.AddToScheme}},
		func(e *testenv.Environment) error { env = e; return nil }))
}

const token = "watch-test-token"

// server is one running ops-apiserver.
type server struct {
	app  *app.App
	base string
	stop func()
}

// startServer starts an ops-apiserver for namespace ns listening on addr
// and waits until it is ready.
func startServer(t *testing.T, ns, addr string) *server {
	t.Helper()
	g := NewWithT(t)
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	g.Expect(os.WriteFile(tokens, []byte(auth.HashToken(token)+`,watcher,,"system:masters"`+"\n"), 0o600)).To(Succeed())
	cfg := config.Default()
	cfg.ListenAddress = addr
	cfg.LocalRepository.ListenAddress = "127.0.0.1:0"
	cfg.Namespace, cfg.Upgrades.Namespace, cfg.Backups.Namespace = ns, ns, ns
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	cfg.Chart.LocalDir = filepath.Join(root, "deploy", "charts", "vmcluster")
	cfg.Catalog.LocalDir = filepath.Join(root, "apiserver", "test", "integration", "testdata", "catalog")
	cfg.Catalog.Charts = []config.CatalogChart{{Name: "greeter"}}
	cfg.Auth.TokenFile = tokens
	cfg.Auth.RateLimitQPS = 0
	g.Expect(cfg.Validate()).To(Succeed())

	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, app.Options{Config: cfg, RESTConfig: env.Config, Logger: testr.New(t)})
	if err != nil {
		cancel()
		t.Fatalf("app.New: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("ops-apiserver stopped with an error: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("ops-apiserver did not stop within 30s")
			}
		})
	}
	t.Cleanup(stop)
	s := &server{app: a, base: "http://" + a.Addr(), stop: stop}
	g.Eventually(func() int {
		resp, err := http.Get(s.base + "/readyz")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}, 30*time.Second, 50*time.Millisecond).Should(Equal(http.StatusOK))
	return s
}

// follow runs clientwatch.Stream on base+path until the test ends; the
// events arrive on the channel.
func follow(t *testing.T, url string, opts clientwatch.Options) <-chan clientwatch.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan clientwatch.Event, 1000)
	done := make(chan error, 1)
	opts.Header = http.Header{"Authorization": {"Bearer " + token}}
	if opts.MinBackoff == 0 {
		opts.MinBackoff, opts.MaxBackoff = 50*time.Millisecond, 500*time.Millisecond
	}
	go func() {
		done <- clientwatch.Stream(ctx, &http.Client{}, url, opts, func(ev clientwatch.Event) error {
			ch <- ev
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("the watch ended with %v, not by the test", err)
		}
	})
	return ch
}

func next(t *testing.T, ch <-chan clientwatch.Event) clientwatch.Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(60 * time.Second):
		t.Fatal("no event within 60s")
	}
	return clientwatch.Event{}
}

// seen is an upgrade event: type, operation name and phase.
type seen struct{ Type, Name, Phase string }

func upgradeEvent(t *testing.T, ev clientwatch.Event) seen {
	t.Helper()
	if ev.Type == clientwatch.Synced {
		return seen{Type: ev.Type}
	}
	var op upgrades.Operation
	if err := json.Unmarshal(ev.Data, &op); err != nil {
		t.Fatalf("event %s %s: %v", ev.Type, ev.Data, err)
	}
	return seen{Type: ev.Type, Name: op.Name, Phase: op.Phase}
}

func newUpgrade(t *testing.T, ns, name, cluster string) *opsv1.ClusterUpgradeOperation {
	t.Helper()
	op := &opsv1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: opsv1.ClusterUpgradeOperationSpec{
			K8sClusterName: cluster, Region: "local", CloudProvider: "mock", TargetVersion: "1.30",
			NodeGroupUpgrades: []opsv1.NodeGroupUpgrade{{NodeGroupName: "ng", Strategy: opsv1.StrategyInPlace}},
		},
	}
	if err := env.Client.Create(context.Background(), op); err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	setPhase(t, op, opsv1.UpgradePhasePending)
	return op
}

// setPhase patches the operation's status.phase, as ops-operator would.
func setPhase(t *testing.T, op *opsv1.ClusterUpgradeOperation, phase opsv1.UpgradePhase) {
	t.Helper()
	orig := op.DeepCopy()
	op.Status.Phase = phase
	if err := env.Client.Status().Patch(context.Background(), op, client.MergeFrom(orig)); err != nil {
		t.Fatalf("setting %s to %s: %v", op.Name, phase, err)
	}
}

func TestUpgradeWatchInitialStateChangesAndDeletion(t *testing.T) {
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	a := newUpgrade(t, ns, "a", "c1")
	b := newUpgrade(t, ns, "b", "c2")
	s := startServer(t, ns, "127.0.0.1:0")

	ch := follow(t, s.base+upgrades.BasePath+"?watch=true&k8sClusterName=c1", clientwatch.Options{})
	g.Expect(upgradeEvent(t, next(t, ch))).To(Equal(seen{Type: "ADDED", Name: "a", Phase: "Pending"}))
	g.Expect(upgradeEvent(t, next(t, ch))).To(Equal(seen{Type: "SYNCED"}))

	// One change, one event; a change outside the filter, none.
	setPhase(t, a, opsv1.UpgradePhaseRunning)
	setPhase(t, b, opsv1.UpgradePhaseRunning)
	g.Expect(upgradeEvent(t, next(t, ch))).To(Equal(seen{Type: "MODIFIED", Name: "a", Phase: "Running"}))
	g.Consistently(ch, time.Second).ShouldNot(Receive())

	g.Expect(env.Client.Delete(context.Background(), a)).To(Succeed())
	g.Expect(upgradeEvent(t, next(t, ch))).To(Equal(seen{Type: "DELETED", Name: "a", Phase: "Running"}))
	g.Consistently(ch, time.Second).ShouldNot(Receive())

	// The list route's rules hold for a watch: no pages, no unknown
	// parameters.
	for _, q := range []string{"watch=true&pageSize=10", "watch=true&bogus=1", "watch=maybe", "resourceVersion=5"} {
		req, _ := http.NewRequest(http.MethodGet, s.base+upgrades.BasePath+"?"+q, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest), q)
	}
	// Without a token: 401, as for the list.
	resp, err := http.Get(s.base + upgrades.BasePath + "?watch=true")
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
}

// The acceptance case of issue 26: a watch client sees every phase
// transition of an upgrade exactly once, in order, across a restart of
// ops-apiserver, resuming from its last event id. The transition made
// while no ops-apiserver runs is seen once, as the operation's state when
// the client resumes (docs/apiserver.md, "Watch streams": states that
// came and went while no stream was open are collapsed into the latest).
func TestUpgradePhasesExactlyOnceAcrossARestart(t *testing.T) {
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	op := newUpgrade(t, ns, "rolling", "prod")
	s1 := startServer(t, ns, "127.0.0.1:0")
	addr := s1.app.Addr()

	reconnected := make(chan struct{}, 100)
	ch := follow(t, s1.base+upgrades.BasePath+"?watch=true&k8sClusterName=prod", clientwatch.Options{
		OnReconnect: func(error, time.Duration) { reconnected <- struct{}{} },
	})
	// restart stops srv once the client has noticed, runs whileDown,
	// and starts another ops-apiserver on the same address.
	restart := func(srv *server, whileDown func()) *server {
		t.Helper()
		srv.stop()
		select {
		case <-reconnected:
		case <-time.After(60 * time.Second):
			t.Fatal("the client did not notice the stream's end")
		}
		whileDown()
		s := startServer(t, ns, addr)
		g.Expect(s.base).To(Equal(srv.base))
		return s
	}
	var phases []string
	var synced []clientwatch.SyncedData
	// take reads events until the operation is in phase want.
	take := func(want string) {
		t.Helper()
		for {
			ev := next(t, ch)
			if ev.Type == clientwatch.Synced {
				var d clientwatch.SyncedData
				g.Expect(json.Unmarshal(ev.Data, &d)).To(Succeed())
				synced = append(synced, d)
				continue
			}
			e := upgradeEvent(t, ev)
			g.Expect(e.Name).To(Equal("rolling"))
			phases = append(phases, e.Phase)
			if e.Phase == want {
				return
			}
		}
	}
	take("Pending")
	setPhase(t, op, opsv1.UpgradePhaseRunning)
	take("Running")

	// A transition while no ops-apiserver runs.
	s2 := restart(s1, func() { setPhase(t, op, opsv1.UpgradePhasePaused) })
	take("Paused")
	setPhase(t, op, opsv1.UpgradePhaseRunning)
	take("Running")
	// A restart without a change: the resumed client gets no state it
	// already had, only SYNCED (a client that did not resume would get
	// Running again).
	restart(s2, func() {})
	g.Expect(next(t, ch).Type).To(Equal(clientwatch.Synced))
	setPhase(t, op, opsv1.UpgradePhaseSucceeded)
	take("Succeeded")

	g.Expect(phases).To(Equal([]string{"Pending", "Running", "Paused", "Running", "Succeeded"}))
	g.Consistently(ch, time.Second).ShouldNot(Receive())
	// The SYNCED of the first two connections (the third's was read
	// above); a server started after the client's last event cannot
	// vouch for deletions before it.
	g.Expect(synced).To(HaveLen(2))
	g.Expect(synced[0].Complete).To(BeTrue())
	g.Expect(synced[1].Complete).To(BeFalse())
}

func TestVMClusterAndBackupWatches(t *testing.T) {
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	s := startServer(t, ns, "127.0.0.1:0")

	vms := follow(t, s.base+vmclusters.BasePath+"?watch=true", clientwatch.Options{})
	g.Expect(next(t, vms).Type).To(Equal(clientwatch.Synced))

	body := `{"name":"metrics","values":{}}`
	req, _ := http.NewRequest(http.MethodPost, s.base+vmclusters.BasePath, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	var created vmclusters.VMCluster
	g.Expect(json.NewDecoder(resp.Body).Decode(&created)).To(Succeed())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusAccepted), fmt.Sprint(created))

	ev := next(t, vms)
	g.Expect(ev.Type).To(Equal(clientwatch.Added))
	var v vmclusters.VMCluster
	g.Expect(json.Unmarshal(ev.Data, &v)).To(Succeed())
	g.Expect(v.Name).To(Equal("vmclusters/metrics"))
	g.Expect(v.ID).To(Equal(created.ID))

	// The backups of that vmcluster: none yet, then SYNCED.
	bks := follow(t, s.base+vmclusters.BasePath+"/metrics/backups?watch=true", clientwatch.Options{})
	g.Expect(next(t, bks).Type).To(Equal(clientwatch.Synced))
	// An unknown vmcluster: 404, as for the list.
	req, _ = http.NewRequest(http.MethodGet, s.base+vmclusters.BasePath+"/nope/backups?watch=true", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusNotFound))
}
