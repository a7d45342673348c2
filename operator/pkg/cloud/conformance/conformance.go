// Package conformance is one test suite that every cloud.Provider
// implementation runs against its fake endpoint (and the mock cloud runs
// against itself), so that all providers behave the same for the
// reconciler: describe, upgrade and poll, list, in-place upgrade,
// clone-create, delete, addons, throttling then success, permanent errors,
// idempotent starts, and resuming a poll from a stored id in a fresh client.
// A provider tested against its fake cloud (`<provider>/<provider>test`)
// runs it through OnFake, which also holds what the providers' own tests
// share.
package conformance

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/cloudtest"
)

// Call kinds a harness can inject faults into (the names of the
// cloud.Provider methods).
const (
	DescribeCluster          = "DescribeCluster"
	StartControlPlaneUpgrade = "StartControlPlaneUpgrade"
	ListNodeGroups           = "ListNodeGroups"
	StartNodeGroupUpgrade    = "StartNodeGroupUpgrade"
	StartCreateNodeGroup     = "StartCreateNodeGroup"
	StartDeleteNodeGroup     = "StartDeleteNodeGroup"
	ListAddons               = "ListAddons"
	StartAddonUpdate         = "StartAddonUpdate"
	PollOperation            = "PollOperation"
)

// Fixture is what every fake cloud starts with: a cluster at
// FromVersion with node groups GroupA and GroupB of two nodes each, and,
// where addons are supported, addon Addon at AddonFrom offering AddonTo.
type Fixture struct {
	FromVersion string
	// TargetVersion is what the suite upgrades to (1.30, or ACK's full
	// version).
	TargetVersion string
	GroupA        string
	GroupB        string
	// NewGroup is a free name valid for the provider (AKS: ≤12 lowercase
	// alphanumerics).
	NewGroup  string
	Addon     string
	AddonFrom string
	AddonTo   string
}

// Harness connects the suite to one provider and its fake cloud.
type Harness struct {
	Fixture Fixture
	// New starts a fresh fake cloud holding the fixture and returns a
	// provider pointed at it.
	New func(t *testing.T) (cloud.Provider, cloud.ClusterRef)
	// Fresh returns a new provider instance (new SDK client) against the
	// cloud of the last New, as a restarted operator would build.
	Fresh func(t *testing.T) cloud.Provider
	// Inject makes the next n calls of kind fail: retryably (throttling)
	// when permanent is false, permanently otherwise.
	Inject func(kind string, n int, permanent bool)
	// PollLimit bounds the polls of one operation (fake clouds finish
	// operations after a few polls).
	PollLimit int
}

// FakeCloud is a fake cloud server of the providers' tests
// (`<provider>/<provider>test`, embedding cloudtest.Fake).
type FakeCloud interface {
	Inject(action string, n int, kind cloudtest.Fault)
	SetRetryAfter(wait time.Duration)
	FailOperations(n int)
	Close()
}

// fakePolls bounds the polls of one operation on a fake cloud (they
// finish operations after a few polls).
const fakePolls = 20

// OnFake is the wiring of a provider's tests against its fake cloud S:
// the suite on fresh fakes (Run, Harness), and for the provider's own
// tests a seeded fake with a provider against it (Start, Fake, Provider),
// a bounded poll (Poll), and the table-driven checks every provider has:
// injected faults classified (ExpectFaultsClassified), refused calls
// (ExpectRefusals), starts repeated by a restarted operator
// (ExpectRestartsFindTheOperation), failed operations reported
// (ExpectFailuresReported).
type OnFake[S FakeCloud, P cloud.Provider] struct {
	Fixture Fixture
	// Ref is the fixture's cluster.
	Ref cloud.ClusterRef
	// NewFake starts an empty fake cloud, closed when the test ends (the
	// fake package's New).
	NewFake func(testing.TB) S
	// Seed adds the fixture's cluster to a fake.
	Seed func(S)
	// Connect returns a new provider (a new SDK client) against a fake.
	Connect func(S) (P, error)
	// Actions maps the suite's call kinds to the fake's API action that
	// does the work.
	Actions map[string]string
}

// Fake starts a fake cloud holding the fixture.
func (o OnFake[S, P]) Fake(t testing.TB) S {
	fake := o.NewFake(t)
	o.Seed(fake)
	return fake
}

// Provider returns a new provider against fake, failing the test when it
// cannot be built.
func (o OnFake[S, P]) Provider(t testing.TB, fake S) P {
	t.Helper()
	p, err := o.Connect(fake)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Start starts a fake cloud holding the fixture and a provider against it.
func (o OnFake[S, P]) Start(t testing.TB) (S, P) {
	t.Helper()
	fake := o.Fake(t)
	return fake, o.Provider(t, fake)
}

// Poll polls operation id on the fixture's cluster until it is no longer
// running (Poll, with the fake clouds' bound).
func (o OnFake[S, P]) Poll(t *testing.T, p cloud.Provider, id string) *cloud.OperationStatus {
	t.Helper()
	return Poll(t, p, o.Ref, id, fakePolls)
}

// Harness is the suite's Harness on fresh fakes.
func (o OnFake[S, P]) Harness() Harness {
	var fake S
	return Harness{
		Fixture: o.Fixture,
		New: func(t *testing.T) (cloud.Provider, cloud.ClusterRef) {
			var p P
			fake, p = o.Start(t)
			return p, o.Ref
		},
		Fresh: func(t *testing.T) cloud.Provider { return o.Provider(t, fake) },
		Inject: func(kind string, n int, permanent bool) {
			fake.Inject(o.Actions[kind], n, cloudtest.FaultFor(permanent))
		},
		PollLimit: fakePolls,
	}
}

// Run runs the suite (Run) on fresh fakes, then what only a fake cloud
// can stage: a provider whose endpoint is gone gets retryable errors.
func (o OnFake[S, P]) Run(t *testing.T) {
	Run(t, o.Harness())
	t.Run("unreachable endpoint is retryable", func(t *testing.T) {
		srv, p := o.Start(t)
		srv.Close()
		_, err := p.ListNodeGroups(context.Background(), o.Ref)
		if !cloud.IsRetryable(err) {
			t.Fatalf("got %v (%s), want retryable", err, cloud.KindOf(err))
		}
	})
}

// FaultCase is a fault injected into the fake's DescribeCluster action
// and how the provider must classify the error it gets.
type FaultCase struct {
	Name  string
	Fault cloudtest.Fault
	// RetryAfter is the wait a throttled answer advertises
	// (cloudtest.Fake.SetRetryAfter; 0: the fake's default).
	RetryAfter time.Duration
	Want       Classified
}

// ExpectFaultsClassified runs each case on a fresh fake: the provider's
// DescribeCluster must fail with the error the case wants, holding none
// of never (ExpectClassified); check, if set, looks further at it.
func (o OnFake[S, P]) ExpectFaultsClassified(t *testing.T, cases []FaultCase, check func(*testing.T, *cloud.Error), never ...string) {
	eachOnFake(t, o, cases, func(t *testing.T, tc FaultCase, srv S, p P) {
		srv.SetRetryAfter(tc.RetryAfter)
		srv.Inject(o.Actions[DescribeCluster], 1, tc.Fault)
		_, err := p.DescribeCluster(context.Background(), o.Ref)
		ce := ExpectClassified(t, err, tc.Want, never...)
		if check != nil {
			check(t, ce)
		}
	})
}

// eachOnFake runs body on a fresh fake and a provider against it, in a
// subtest per case.
func eachOnFake[S FakeCloud, P cloud.Provider, C interface{ name() string }](t *testing.T, o OnFake[S, P], cases []C, body func(*testing.T, C, S, P)) {
	for _, tc := range cases {
		t.Run(tc.name(), func(t *testing.T) {
			srv, p := o.Start(t)
			body(t, tc, srv, p)
		})
	}
}

func (c FaultCase) name() string { return c.Name }

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	if h.PollLimit == 0 {
		h.PollLimit = 50
	}
	fx := h.Fixture
	ctx := context.Background()

	t.Run("describe", func(t *testing.T) {
		p, ref := h.New(t)
		c, err := p.DescribeCluster(ctx, ref)
		must(t, err)
		if c.Version == "" || !sameMinor(c.Version, fx.FromVersion) {
			t.Fatalf("version %q, want %s", c.Version, fx.FromVersion)
		}
		if p.NodeGroupLabel() == "" {
			t.Fatal("empty node group label")
		}
	})

	t.Run("describe a missing cluster is NotFound", func(t *testing.T) {
		p, ref := h.New(t)
		ref.Name += "-missing"
		ref.ClusterID += "-missing"
		_, err := p.DescribeCluster(ctx, ref)
		if !cloud.IsNotFound(err) {
			t.Fatalf("got %v (%s), want NotFound", err, cloud.KindOf(err))
		}
	})

	t.Run("control plane upgrade and poll", func(t *testing.T) {
		p, ref := h.New(t)
		id, err := p.StartControlPlaneUpgrade(ctx, ref, fx.TargetVersion, "tok-cp")
		must(t, err)
		waitDone(t, h, p, ref, id)
		c, err := p.DescribeCluster(ctx, ref)
		must(t, err)
		if !sameMinor(c.Version, fx.TargetVersion) {
			t.Fatalf("version after upgrade %q, want %s", c.Version, fx.TargetVersion)
		}
	})

	t.Run("the same token does not start a second operation", func(t *testing.T) {
		p, ref := h.New(t)
		id1, err := p.StartNodeGroupUpgrade(ctx, ref, fx.GroupA, fx.TargetVersion, "tok-same")
		must(t, err)
		id2, err := p.StartNodeGroupUpgrade(ctx, ref, fx.GroupA, fx.TargetVersion, "tok-same")
		must(t, err)
		if id1 != id2 {
			t.Fatalf("repeated start returned %q then %q", id1, id2)
		}
		waitDone(t, h, p, ref, id1)
	})

	t.Run("list node groups", func(t *testing.T) {
		p, ref := h.New(t)
		groups, err := p.ListNodeGroups(ctx, ref)
		must(t, err)
		a := find(groups, fx.GroupA)
		if a == nil || find(groups, fx.GroupB) == nil {
			t.Fatalf("groups %v lack %s or %s", names(groups), fx.GroupA, fx.GroupB)
		}
		if a.DesiredSize != 2 || len(a.InstanceTypes) == 0 {
			t.Fatalf("group %s: size %d instance types %v", a.Name, a.DesiredSize, a.InstanceTypes)
		}
	})

	t.Run("in-place node group upgrade", func(t *testing.T) {
		p, ref := h.New(t)
		id, err := p.StartNodeGroupUpgrade(ctx, ref, fx.GroupA, fx.TargetVersion, "tok-ip")
		must(t, err)
		waitDone(t, h, p, ref, id)
		groups, err := p.ListNodeGroups(ctx, ref)
		must(t, err)
		if g := find(groups, fx.GroupA); g == nil || !sameMinor(g.Version, fx.TargetVersion) {
			t.Fatalf("group after upgrade: %+v", g)
		}
	})

	t.Run("clone-create then delete", func(t *testing.T) {
		p, ref := h.New(t)
		groups, err := p.ListNodeGroups(ctx, ref)
		must(t, err)
		old := find(groups, fx.GroupB)
		clone := *old
		clone.Name, clone.Version = fx.NewGroup, fx.TargetVersion
		id, err := p.StartCreateNodeGroup(ctx, ref, clone, "tok-create")
		must(t, err)
		waitDone(t, h, p, ref, id)
		groups, err = p.ListNodeGroups(ctx, ref)
		must(t, err)
		n := find(groups, fx.NewGroup)
		if n == nil {
			t.Fatalf("created group missing from %v", names(groups))
		}
		if n.DesiredSize != old.DesiredSize || !slices.Equal(n.InstanceTypes, old.InstanceTypes) || !sameMinor(n.Version, fx.TargetVersion) {
			t.Fatalf("clone %+v differs from %+v", n, old)
		}
		for k, v := range old.Labels {
			if n.Labels[k] != v {
				t.Fatalf("clone lacks label %s=%s: %v", k, v, n.Labels)
			}
		}
		id, err = p.StartDeleteNodeGroup(ctx, ref, fx.GroupB, "tok-delete")
		must(t, err)
		waitDone(t, h, p, ref, id)
		groups, err = p.ListNodeGroups(ctx, ref)
		must(t, err)
		if find(groups, fx.GroupB) != nil {
			t.Fatalf("deleted group still listed: %v", names(groups))
		}
	})

	t.Run("addons", func(t *testing.T) {
		p, ref := h.New(t)
		if !p.SupportsAddons() {
			_, err := p.ListAddons(ctx, ref)
			if cloud.KindOf(err) != cloud.Unsupported {
				t.Fatalf("ListAddons on %s: %v, want Unsupported", p.Name(), err)
			}
			_, err = p.StartAddonUpdate(ctx, ref, cloud.AddonUpdate{Name: "x", Version: "v1"}, "tok")
			if cloud.KindOf(err) != cloud.Unsupported {
				t.Fatalf("StartAddonUpdate on %s: %v, want Unsupported", p.Name(), err)
			}
			return
		}
		addons, err := p.ListAddons(ctx, ref)
		must(t, err)
		var a *cloud.Addon
		for i := range addons {
			if addons[i].Name == fx.Addon {
				a = &addons[i]
			}
		}
		if a == nil || a.Version != fx.AddonFrom || !slices.Contains(a.AvailableVersions, fx.AddonTo) {
			t.Fatalf("addon %s: %+v", fx.Addon, a)
		}
		id, err := p.StartAddonUpdate(ctx, ref, cloud.AddonUpdate{Name: fx.Addon, Version: fx.AddonTo, ResolveConflicts: "PRESERVE"}, "tok-addon")
		must(t, err)
		waitDone(t, h, p, ref, id)
		addons, err = p.ListAddons(ctx, ref)
		must(t, err)
		for _, x := range addons {
			if x.Name == fx.Addon && x.Version != fx.AddonTo {
				t.Fatalf("addon after update at %s, want %s", x.Version, fx.AddonTo)
			}
		}
	})

	t.Run("throttling then success", func(t *testing.T) {
		p, ref := h.New(t)
		h.Inject(DescribeCluster, 1, false)
		_, err := p.DescribeCluster(ctx, ref)
		if !cloud.IsRetryable(err) {
			t.Fatalf("throttled call: %v (%s), want retryable", err, cloud.KindOf(err))
		}
		_, err = p.DescribeCluster(ctx, ref)
		must(t, err)
		h.Inject(StartNodeGroupUpgrade, 1, false)
		_, err = p.StartNodeGroupUpgrade(ctx, ref, fx.GroupA, fx.TargetVersion, "tok-thr")
		if !cloud.IsRetryable(err) {
			t.Fatalf("throttled start: %v, want retryable", err)
		}
		id, err := p.StartNodeGroupUpgrade(ctx, ref, fx.GroupA, fx.TargetVersion, "tok-thr")
		must(t, err)
		waitDone(t, h, p, ref, id)
	})

	t.Run("permanent error", func(t *testing.T) {
		p, ref := h.New(t)
		h.Inject(StartControlPlaneUpgrade, 1, true)
		_, err := p.StartControlPlaneUpgrade(ctx, ref, fx.TargetVersion, "tok-perm")
		if err == nil || cloud.IsRetryable(err) {
			t.Fatalf("got %v, want a permanent error", err)
		}
		if err.Error() == "" {
			t.Fatal("empty message")
		}
	})

	t.Run("resume polling from a stored id in a fresh client", func(t *testing.T) {
		p, ref := h.New(t)
		id, err := p.StartNodeGroupUpgrade(ctx, ref, fx.GroupB, fx.TargetVersion, "tok-resume")
		must(t, err)
		fresh := h.Fresh(t)
		waitDone(t, h, fresh, ref, id)
		groups, err := fresh.ListNodeGroups(ctx, ref)
		must(t, err)
		if g := find(groups, fx.GroupB); g == nil || !sameMinor(g.Version, fx.TargetVersion) {
			t.Fatalf("group after resumed upgrade: %+v", g)
		}
	})
}

func waitDone(t *testing.T, h Harness, p cloud.Provider, ref cloud.ClusterRef, id string) {
	t.Helper()
	if id == "" {
		t.Fatal("empty operation id")
	}
	for i := 0; i < h.PollLimit; i++ {
		st, err := p.PollOperation(context.Background(), ref, id)
		if err != nil && !cloud.IsRetryable(err) {
			t.Fatalf("poll %s: %v", id, err)
		}
		if err == nil {
			switch st.State {
			case cloud.OperationSucceeded:
				return
			case cloud.OperationFailed:
				t.Fatalf("operation %s failed: %s", id, st.Message)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("operation %s not done after %d polls", id, h.PollLimit)
}

// Poll polls operation id until it is no longer running and returns its
// final status; it fails the test on a failed poll or when the operation
// still runs after limit polls. Provider tests use it for their own cases.
func Poll(t *testing.T, p cloud.Provider, ref cloud.ClusterRef, id string, limit int) *cloud.OperationStatus {
	t.Helper()
	for range limit {
		st, err := p.PollOperation(context.Background(), ref, id)
		if err != nil {
			t.Fatalf("poll %s: %v", id, err)
		}
		if st.State != cloud.OperationRunning {
			return st
		}
	}
	t.Fatalf("operation %s still running after %d polls", id, limit)
	return nil
}

// Classified is what a classified error must carry.
type Classified struct {
	Kind       cloud.ErrorKind
	Status     int
	RetryAfter time.Duration
}

// ExpectClassified fails the test unless err is a *cloud.Error as want
// whose message holds none of never (credentials, URLs, request ids); it
// returns the error for the provider's own checks.
func ExpectClassified(t *testing.T, err error, want Classified, never ...string) *cloud.Error {
	t.Helper()
	var ce *cloud.Error
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *cloud.Error", err)
	}
	if got := (Classified{Kind: ce.Kind, Status: ce.StatusCode, RetryAfter: ce.RetryAfter}); got != want {
		t.Errorf("classified as %+v, want %+v (%v)", got, want, ce)
	}
	for _, s := range never {
		if strings.Contains(ce.Error(), s) {
			t.Errorf("message %q holds %q", ce.Error(), s)
		}
	}
	return ce
}

// Refusal is a call the provider must refuse: with an error of Kind whose
// message holds Message.
type Refusal[P cloud.Provider] struct {
	Name    string
	Call    func(P) error
	Kind    cloud.ErrorKind
	Message string
}

// ExpectRefusals makes each case's call on a fresh fake and expects it
// refused as the case says.
func (o OnFake[S, P]) ExpectRefusals(t *testing.T, cases []Refusal[P]) {
	eachOnFake(t, o, cases, func(t *testing.T, tc Refusal[P], _ S, p P) {
		err := tc.Call(p)
		if err == nil || cloud.KindOf(err) != tc.Kind {
			t.Fatalf("got %v (%s), want %s", err, cloud.KindOf(err), tc.Kind)
		}
		if !strings.Contains(err.Error(), tc.Message) {
			t.Fatalf("message %q lacks %q", err.Error(), tc.Message)
		}
	})
}

func (c Refusal[P]) name() string { return c.Name }

// Operation is the start of an operation in a provider's test.
type Operation[P cloud.Provider] struct {
	Name  string
	Start func(P) (string, error)
	// Again (ExpectRestartsFindTheOperation): a repeat after the
	// operation finished answers the same operation too.
	Again bool
	// Message (ExpectFailuresReported) is what the status of the failed
	// operation says.
	Message string
}

func (c Operation[P]) name() string { return c.Name }

// ExpectRestartsFindTheOperation starts each case's operation on a fresh
// fake, repeats the start with a fresh provider (a restarted operator)
// and expects the same operation, which then succeeds; with Again, a
// repeat after it finished answers it once more.
func (o OnFake[S, P]) ExpectRestartsFindTheOperation(t *testing.T, cases []Operation[P]) {
	eachOnFake(t, o, cases, func(t *testing.T, tc Operation[P], srv S, p P) {
		id1, err := tc.Start(p)
		must(t, err)
		id2, err := tc.Start(o.Provider(t, srv))
		must(t, err)
		if id2 != id1 {
			t.Fatalf("repeated by a fresh provider: %q, then %q", id1, id2)
		}
		if st := o.Poll(t, p, id1); st.State != cloud.OperationSucceeded {
			t.Fatalf("operation %s: %s %s", id1, st.State, st.Message)
		}
		if tc.Again {
			id3, err := tc.Start(p)
			must(t, err)
			if id3 != id1 {
				t.Fatalf("repeated after it finished: %q, then %q", id1, id3)
			}
		}
	})
}

// ExpectFailuresReported starts each case's operation on a fresh fake
// told to fail it (cloudtest.Fake.FailOperations) and expects it polled
// as failed with the cloud's message (Message).
func (o OnFake[S, P]) ExpectFailuresReported(t *testing.T, cases []Operation[P]) {
	eachOnFake(t, o, cases, func(t *testing.T, tc Operation[P], srv S, p P) {
		srv.FailOperations(1)
		id, err := tc.Start(p)
		must(t, err)
		st := o.Poll(t, p, id)
		if st.State != cloud.OperationFailed {
			t.Fatalf("operation %s: %s, want failed", id, st.State)
		}
		if !strings.Contains(st.Message, tc.Message) {
			t.Fatalf("message %q lacks %q", st.Message, tc.Message)
		}
	})
}

// NodeGroupNamed is the group of groups named name, the zero NodeGroup
// when there is none.
func NodeGroupNamed(groups []cloud.NodeGroup, name string) cloud.NodeGroup {
	if g := find(groups, name); g != nil {
		return *g
	}
	return cloud.NodeGroup{}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func find(groups []cloud.NodeGroup, name string) *cloud.NodeGroup {
	for i := range groups {
		if groups[i].Name == name {
			return &groups[i]
		}
	}
	return nil
}

func names(groups []cloud.NodeGroup) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g.Name)
	}
	return out
}

// sameMinor compares major.minor (cloud.MajorMinor), ignoring "v", patch
// and suffixes.
func sameMinor(a, b string) bool {
	am, an, okA := cloud.MajorMinor(a)
	bm, bn, okB := cloud.MajorMinor(b)
	return okA && okB && am == bm && an == bn
}
