package drain_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/operator/internal/drain"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// env is the control plane shared by every test; each test works in a
// namespace of its own, on Nodes named after it.
var env *testenv.Environment

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// now is the clock of every Drain call: the package only stamps it.
var now = time.Date(2026, 12, 1, 4, 10, 6, 0, time.UTC)

// newNodes creates Nodes named <prefix>-<suffix> and deletes them after the
// test. No kubelet runs: they are plain objects that pods are bound to.
func newNodes(t *testing.T, prefix string, suffixes ...string) []string {
	t.Helper()
	g := NewWithT(t)
	var names []string
	for _, s := range suffixes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + s}}
		g.Expect(env.Client.Create(context.Background(), node)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })
		names = append(names, node.Name)
	}
	return names
}

// podKind is what a test pod looks like to a drain.
type podKind string

const (
	running     podKind = "running"     // Running and Ready: guarded by PDBs
	pending     podKind = "pending"     // Pending (the API server ignores PDBs for it)
	daemonSet   podKind = "daemonset"   // controlled by a DaemonSet
	mirror      podKind = "mirror"      // mirror pod of a static pod
	succeeded   podKind = "succeeded"   // finished
	failed      podKind = "failed"      // finished
	terminating podKind = "terminating" // deleted, waiting for the (absent) kubelet
)

type testPod struct {
	name, node string
	kind       podKind
	labels     map[string]string
}

// createPod creates a pod bound to its Node (spec.nodeName set directly: no
// scheduler runs) and sets the status a kubelet would report.
func createPod(g Gomega, ns string, p testPod) *corev1.Pod {
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.name, Labels: p.labels},
		Spec: corev1.PodSpec{
			NodeName:   p.node,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}
	switch p.kind {
	case daemonSet:
		pod.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: types.UID("ds-uid"),
			Controller: new(true),
		}}
	case mirror:
		pod.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
	}
	g.Expect(env.Client.Create(ctx, pod)).To(Succeed())

	phase := corev1.PodRunning
	switch p.kind {
	case pending:
		return pod
	case succeeded:
		phase = corev1.PodSucceeded
	case failed:
		phase = corev1.PodFailed
	}
	pod.Status = corev1.PodStatus{Phase: phase}
	if phase == corev1.PodRunning {
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	g.Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())
	if p.kind == terminating {
		// A graceful delete of a pod bound to a Node only sets its
		// deletionTimestamp; the kubelet would remove it.
		g.Expect(env.Client.Delete(ctx, pod)).To(Succeed())
	}
	return pod
}

// playKubelet removes the pods of ns that are terminating, as the kubelet
// would once their containers stopped (none runs here): a delete with grace
// period 0.
func playKubelet(g Gomega, ns string) {
	pods := &corev1.PodList{}
	g.Expect(env.Client.List(context.Background(), pods, client.InNamespace(ns))).To(Succeed())
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp != nil {
			err := env.Client.Delete(context.Background(), &pods.Items[i], client.GracePeriodSeconds(0))
			g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		}
	}
}

// names are the pod names of keys (every test pod is in one namespace).
func names(keys []types.NamespacedName) []string {
	out := []string{}
	for _, k := range keys {
		out = append(out, k.Name)
	}
	return out
}

// list normalises an expected list, so that nil and empty compare equal.
func list(s ...string) []string { return append([]string{}, s...) }

func TestCordon(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// cordoned are the indexes of the Nodes that are unschedulable
		// before Cordon.
		cordoned []int
		// missing adds the name of a Node that does not exist.
		missing bool
	}{
		{name: "schedulable nodes"},
		{name: "already cordoned nodes are not written", cordoned: []int{0, 1}},
		{name: "a mix", cordoned: []int{1}},
		{name: "a missing node is ignored", missing: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			nodes := newNodes(t, env.NewNamespace(t), "a", "b")
			for _, i := range tc.cordoned {
				node := getNode(g, nodes[i])
				node.Spec.Unschedulable = true
				g.Expect(env.Client.Update(ctx, node)).To(Succeed())
			}
			before := map[string]string{}
			for _, n := range nodes {
				before[n] = getNode(g, n).ResourceVersion
			}
			arg := nodes
			if tc.missing {
				arg = append([]string{"no-such-node"}, nodes...)
			}

			g.Expect(drain.Cordon(ctx, env.Client, arg)).To(Succeed())
			after := map[string]string{}
			for i, n := range nodes {
				node := getNode(g, n)
				g.Expect(node.Spec.Unschedulable).To(BeTrue(), n)
				if slices.Contains(tc.cordoned, i) {
					g.Expect(node.ResourceVersion).To(Equal(before[n]), "%s was cordoned already", n)
				} else {
					g.Expect(node.ResourceVersion).NotTo(Equal(before[n]), "%s is written once", n)
				}
				after[n] = node.ResourceVersion
			}

			// Idempotent: a second call writes nothing.
			g.Expect(drain.Cordon(ctx, env.Client, arg)).To(Succeed())
			for _, n := range nodes {
				g.Expect(getNode(g, n).ResourceVersion).To(Equal(after[n]), n)
			}
		})
	}
}

func getNode(g Gomega, name string) *corev1.Node {
	node := &corev1.Node{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: name}, node)).To(Succeed())
	return node
}

// TestDrainPass checks what one pass does with each kind of pod, and that
// the next pass, once the evicted pods are gone, reports Done.
func TestDrainPass(t *testing.T) {
	ctx := context.Background()
	type want struct {
		remaining, evicted, terminating []string
		done                            bool
	}
	cases := []struct {
		name string
		// pods are placed on Node "a", "b" or "other"; Drain drains a and b.
		pods []testPod
		// first is the first pass; after it the test plays the kubelet.
		first want
		// untouched pods must still exist afterwards without a
		// deletionTimestamp.
		untouched []string
	}{
		{
			name:  "no pods: done at once",
			first: want{done: true},
		},
		{
			name: "evicts the pods of both nodes",
			pods: []testPod{
				{name: "web-1", node: "b", kind: running},
				{name: "web-0", node: "a", kind: running},
				{name: "job", node: "a", kind: pending},
			},
			first: want{remaining: list("job", "web-0", "web-1"), evicted: list("job", "web-0", "web-1")},
		},
		{
			name: "skips daemonset, mirror and finished pods",
			pods: []testPod{
				{name: "agent", node: "a", kind: daemonSet},
				{name: "static", node: "a", kind: mirror},
				{name: "done", node: "b", kind: succeeded},
				{name: "crashed", node: "b", kind: failed},
			},
			first:     want{done: true},
			untouched: []string{"agent", "static", "done", "crashed"},
		},
		{
			name: "a terminating pod is waited for, not evicted again",
			pods: []testPod{
				{name: "going", node: "a", kind: terminating},
				{name: "web", node: "b", kind: running},
			},
			first: want{remaining: list("going", "web"), evicted: list("web"), terminating: list("going")},
		},
		{
			name: "pods on other nodes are left alone",
			pods: []testPod{
				{name: "elsewhere", node: "other", kind: running},
				{name: "web", node: "a", kind: running},
			},
			first:     want{remaining: list("web"), evicted: list("web")},
			untouched: []string{"elsewhere"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := env.NewNamespace(t)
			nodes := newNodes(t, ns, "a", "b", "other")
			node := map[string]string{"a": nodes[0], "b": nodes[1], "other": nodes[2]}
			for _, p := range tc.pods {
				p.node = node[p.node]
				createPod(g, ns, p)
			}

			res, err := drain.Drain(ctx, env.Client, env.Client, nodes[:2], now)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(names(res.Remaining)).To(Equal(list(tc.first.remaining...)), "remaining")
			g.Expect(names(res.Evicted)).To(Equal(list(tc.first.evicted...)), "evicted")
			g.Expect(names(res.Terminating)).To(Equal(list(tc.first.terminating...)), "terminating")
			g.Expect(res.Blocked).To(BeEmpty())
			g.Expect(res.Done).To(Equal(tc.first.done), "done")

			// Evicted pods are terminating (bound to a Node, they wait for
			// the kubelet), never deleted outright.
			for _, name := range tc.first.evicted {
				pod := &corev1.Pod{}
				g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod)).To(Succeed())
				g.Expect(pod.DeletionTimestamp).NotTo(BeNil(), name)
			}

			// Until the kubelet removes them the drain is not done.
			if !tc.first.done {
				again, err := drain.Drain(ctx, env.Client, env.Client, nodes[:2], now)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(again.Done).To(BeFalse())
				g.Expect(again.Evicted).To(BeEmpty(), "terminating pods are not evicted twice")
				g.Expect(names(again.Terminating)).To(Equal(list(tc.first.remaining...)))
			}

			playKubelet(g, ns)
			res, err = drain.Drain(ctx, env.Client, env.Client, nodes[:2], now)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Done).To(BeTrue())
			g.Expect(res.Remaining).To(BeEmpty())

			for _, name := range tc.untouched {
				pod := &corev1.Pod{}
				g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod)).To(Succeed())
				g.Expect(pod.DeletionTimestamp).To(BeNil(), name)
			}
		})
	}
}

// setPDBStatus plays kube-controller-manager's disruption controller, which
// does not run here. What the Eviction API (kube-apiserver v1.37,
// pkg/registry/core/pod/storage/eviction.go, checkAndDecrement) reads from
// the PodDisruptionBudget guarding a Running, Ready pod:
//
//   - status.observedGeneration < metadata.generation: 429 with Retry-After
//     10 s and the cause "The disruption budget <name> is still being
//     processed by the server." So a new budget, or one whose spec just
//     changed, refuses every eviction until the controller has written its
//     status for that generation (Drain reports this case itself, without
//     calling the API: see its doc);
//   - status.disruptionsAllowed == 0: 429 without Retry-After, with the
//     cause "The disruption budget <name> needs <desiredHealthy> healthy
//     pods and has <currentHealthy> currently" when currentHealthy <=
//     desiredHealthy, else "... does not allow evicting pods currently";
//   - status.disruptionsAllowed > 0: allowed; the API server itself
//     decrements disruptionsAllowed and records the pod in
//     status.disruptedPods, so one eviction per allowed disruption until
//     the controller recomputes;
//   - status.disruptionsAllowed < 0 or more than 2000 disruptedPods: 403
//     (policy/v1 status validation rejects a negative value anyway).
//
// currentHealthy, desiredHealthy and expectedPods only shape the message.
// Pods that are Pending, Succeeded, Failed or already terminating are
// deleted without looking at budgets, and a Running pod that is not Ready
// is deleted without using a disruption when currentHealthy >=
// desiredHealthy > 0 — so the guarded test pods are Running and Ready.
func setPDBStatus(g Gomega, key client.ObjectKey, allowed, healthy, desired int32) {
	pdb := &policyv1.PodDisruptionBudget{}
	g.Expect(env.Client.Get(context.Background(), key, pdb)).To(Succeed())
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptionsAllowed: allowed,
		CurrentHealthy:     healthy,
		DesiredHealthy:     desired,
		ExpectedPods:       healthy,
	}
	g.Expect(env.Client.Status().Update(context.Background(), pdb)).To(Succeed())
}

// TestDrainRespectsPodDisruptionBudget walks a drain that a budget blocks,
// then relaxes it one disruption at a time, to the end.
func TestDrainRespectsPodDisruptionBudget(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	nodes := newNodes(t, ns, "a", "b")
	db := map[string]string{"app": "db"}
	createPod(g, ns, testPod{name: "db-0", node: nodes[0], kind: running, labels: db})
	createPod(g, ns, testPod{name: "db-1", node: nodes[1], kind: running, labels: db})
	createPod(g, ns, testPod{name: "web", node: nodes[0], kind: running, labels: map[string]string{"app": "web"}})
	// A budget that matches nothing here must not be named.
	other := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: new(intstr.FromInt32(0)),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}},
		},
	}
	g.Expect(env.Client.Create(ctx, other)).To(Succeed())
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: new(intstr.FromInt32(2)),
			Selector:     &metav1.LabelSelector{MatchLabels: db},
		},
	}
	g.Expect(env.Client.Create(ctx, pdb)).To(Succeed())
	pdbKey := client.ObjectKeyFromObject(pdb)
	dbPDB := &types.NamespacedName{Namespace: ns, Name: "db"}
	blocked := func(pod, node, cause string) drain.Blocked {
		return drain.Blocked{
			Pod: types.NamespacedName{Namespace: ns, Name: pod}, Node: node, PDB: dbPDB,
			Message:    "Cannot evict pod as it would violate the pod's disruption budget. " + cause,
			ObservedAt: now,
		}
	}
	// A budget whose status is older than its spec: Drain does not call
	// the Eviction API (see Drain), it says why itself.
	stale := func(pod, node string, observed, generation int64) drain.Blocked {
		return drain.Blocked{
			Pod: types.NamespacedName{Namespace: ns, Name: pod}, Node: node, PDB: dbPDB,
			Message: fmt.Sprintf("The disruption budget db is not processed yet by the disruption controller "+
				"(status.observedGeneration %d < generation %d): the Eviction API refuses every eviction it guards", observed, generation),
			ObservedAt: now,
		}
	}
	pass := func() *drain.Result {
		t.Helper()
		res, err := drain.Drain(ctx, env.Client, env.Client, nodes, now)
		g.Expect(err).NotTo(HaveOccurred())
		return res
	}

	steps := []struct {
		name   string
		before func()
		// evicted, blocked and remaining are what the pass reports.
		evicted, remaining []string
		blocked            []drain.Blocked
		done               bool
		// stale: the budget's status is older than its spec.
		stale bool
	}{
		{
			name:      "a budget without status refuses: the disruption controller has not processed it",
			stale:     true,
			evicted:   list("web"),
			blocked:   []drain.Blocked{stale("db-0", nodes[0], 0, 1), stale("db-1", nodes[1], 0, 1)},
			remaining: list("db-0", "web", "db-1"),
		},
		{
			name:      "no disruption allowed: blocked, with the budget's numbers",
			before:    func() { playKubelet(g, ns); setPDBStatus(g, pdbKey, 0, 2, 2) },
			blocked:   []drain.Blocked{blocked("db-0", nodes[0], "The disruption budget db needs 2 healthy pods and has 2 currently"), blocked("db-1", nodes[1], "The disruption budget db needs 2 healthy pods and has 2 currently")},
			remaining: list("db-0", "db-1"),
		},
		{
			name:  "relaxing the spec alone is not enough: the new generation is not processed yet",
			stale: true,
			before: func() {
				cur := &policyv1.PodDisruptionBudget{}
				g.Expect(env.Client.Get(ctx, pdbKey, cur)).To(Succeed())
				patch := client.MergeFrom(cur.DeepCopy())
				cur.Spec.MinAvailable = new(intstr.FromInt32(1))
				g.Expect(env.Client.Patch(ctx, cur, patch)).To(Succeed())
			},
			blocked:   []drain.Blocked{stale("db-0", nodes[0], 1, 2), stale("db-1", nodes[1], 1, 2)},
			remaining: list("db-0", "db-1"),
		},
		{
			name:      "one disruption allowed: one pod goes, the API server uses up the budget for the other",
			before:    func() { setPDBStatus(g, pdbKey, 1, 2, 1) },
			evicted:   list("db-0"),
			blocked:   []drain.Blocked{blocked("db-1", nodes[1], "The disruption budget db does not allow evicting pods currently")},
			remaining: list("db-0", "db-1"),
		},
		{
			name: "the evicted pod is still terminating: not done",
			before: func() {
				cur := &policyv1.PodDisruptionBudget{}
				g.Expect(env.Client.Get(ctx, pdbKey, cur)).To(Succeed())
				g.Expect(cur.Status.DisruptionsAllowed).To(BeZero(), "decremented by the API server")
				g.Expect(cur.Status.DisruptedPods).To(HaveKey("db-0"))
				// The replacement of db-0 became healthy elsewhere.
				setPDBStatus(g, pdbKey, 1, 2, 1)
			},
			evicted:   list("db-1"),
			remaining: list("db-0", "db-1"),
		},
		{
			name:   "all gone: done",
			before: func() { playKubelet(g, ns) },
			done:   true,
		},
	}
	for _, step := range steps {
		if step.before != nil {
			step.before()
		}
		if step.stale {
			// What Drain avoids: the API server refuses with a 429 that
			// asks the client to retry in 10 s (client-go would, ten times).
			err := evictOnce(ns, "db-0")
			g.Expect(apierrors.IsTooManyRequests(err)).To(BeTrue(), "%s: %v", step.name, err)
			delay, ok := apierrors.SuggestsClientDelay(err)
			g.Expect(ok).To(BeTrue())
			g.Expect(delay).To(Equal(10))
			g.Expect(causes(err)).To(ConsistOf("The disruption budget db is still being processed by the server."))
		}
		res := pass()
		g.Expect(names(res.Evicted)).To(Equal(list(step.evicted...)), step.name)
		g.Expect(names(res.Remaining)).To(Equal(list(step.remaining...)), step.name)
		g.Expect(append([]drain.Blocked{}, res.Blocked...)).To(Equal(append([]drain.Blocked{}, step.blocked...)), step.name)
		g.Expect(res.Done).To(Equal(step.done), step.name)
	}
}

// evictOnce asks for the eviction of a pod once, without client-go's
// retries on a 429 with Retry-After.
func evictOnce(ns, name string) error {
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return err
	}
	body := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return cs.PolicyV1().RESTClient().Post().
		AbsPath("/api/v1/namespaces", ns, "pods", name, "eviction").
		Body(body).MaxRetries(0).Do(context.Background()).Error()
}

// causes are the DisruptionBudget causes of an API error.
func causes(err error) []string {
	var out []string
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			if c.Type == policyv1.DisruptionBudgetCause {
				out = append(out, c.Message)
			}
		}
	}
	return out
}
