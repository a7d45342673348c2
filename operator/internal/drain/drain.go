// Package drain cordons Nodes and drains them through the Eviction API, the
// way `kubectl drain` does without --force and --disable-eviction: every pod
// leaves through a policy/v1 Eviction, so PodDisruptionBudgets are respected
// and each pod gets its own termination grace period. Nothing here deletes a
// pod, force-deletes one, or waits.
//
// Drain is non-blocking: one call makes one pass over the Nodes — it evicts
// what it can and reports what it saw — so that a reconciler can record the
// result, requeue and call it again until Result.Done.
package drain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the field manager of the writes this package makes.
const FieldOwner = "ops-operator"

// cordonPatch marks a Node unschedulable; a JSON merge patch, so that
// nothing else of the Node is touched.
var cordonPatch = []byte(`{"spec":{"unschedulable":true}}`)

// Cordon marks every Node in nodes unschedulable (spec.unschedulable=true)
// with a JSON merge patch. It is idempotent: patching an already cordoned
// Node changes nothing. A Node that no longer exists needs no cordon and is
// ignored.
func Cordon(ctx context.Context, c client.Client, nodes []string) error {
	for _, name := range nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		err := c.Patch(ctx, node, client.RawPatch(types.MergePatchType, cordonPatch), client.FieldOwner(FieldOwner))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("cordoning node %s: %w", name, err)
		}
	}
	return nil
}

// Blocked is an eviction the API server refused because of a
// PodDisruptionBudget (HTTP 429 TooManyRequests).
type Blocked struct {
	// Pod is the pod that could not be evicted.
	Pod types.NamespacedName
	// Node is the Node the pod runs on.
	Node string
	// PDB is the PodDisruptionBudget in the pod's namespace whose selector
	// matches the pod; nil when none matches any more (it was changed or
	// deleted since the API server refused the eviction).
	PDB *types.NamespacedName
	// Message is the API server's message, with the budget's own
	// explanation when the API server gave one, for example "Cannot evict
	// pod as it would violate the pod's disruption budget. The disruption
	// budget db needs 2 healthy pods and has 2 currently".
	Message string
	// ObservedAt is the now passed to Drain: when this pass saw the
	// refusal. Drain keeps no state; a caller that wants "blocked since"
	// keeps the first ObservedAt of the same pod.
	ObservedAt time.Time
}

// Result is what one Drain pass saw and did. Pods are sorted by Node, then
// namespace and name.
type Result struct {
	// Remaining are the pods still on the Nodes that the drain waits for:
	// every pod except DaemonSet-owned, mirror and terminal (Succeeded or
	// Failed) ones — including the ones evicted in this pass, blocked ones
	// and ones already terminating. Pods found gone while evicting are not
	// in it.
	Remaining []types.NamespacedName
	// Evicted are the pods whose eviction the API server accepted in this
	// pass; they terminate with their own grace period.
	Evicted []types.NamespacedName
	// Terminating are the pods that already had a deletionTimestamp when
	// the pass listed them (an eviction or deletion in progress). Like
	// `kubectl drain`, the drain is not done until they are gone.
	Terminating []types.NamespacedName
	// Blocked are the evictions refused by a PodDisruptionBudget.
	Blocked []Blocked
	// Done is true when the pass found no pod to wait for on any of the
	// Nodes (Remaining is empty). A pass that evicts a pod is never Done:
	// the next pass confirms that the pod is gone.
	Done bool
}

// Drain makes one pass over nodes: it lists their pods, skips the ones a
// drain leaves alone (DaemonSet-owned, mirror/static and terminal pods),
// creates a policy/v1 Eviction for every other pod that is not terminating
// yet, and reports what it saw. It never waits and never forces: a refused
// eviction is reported in Result.Blocked and retried by the next pass.
//
// Pods are listed with the field selector spec.nodeName=<node> through r,
// which must read from the API server: pass the manager's APIReader
// (mgr.GetAPIReader()), because controller-runtime's cached client only
// serves field selectors it has an index for. PodDisruptionBudgets are read
// through r too. c creates the Evictions.
//
// Evictions carry a UID precondition, so a pod that was deleted and
// re-created with the same name (a StatefulSet pod, typically on another
// Node) is never evicted by mistake; that conflict, like a 404, means the
// pod that was listed is gone. An error other than a 429 refusal, a 404 or
// that conflict does not stop the pass: the remaining pods are still
// evicted, and the errors are returned together with the Result of the
// pass.
//
// Staying non-blocking: client-go silently retries a 429 that carries a
// Retry-After header, up to ten times, sleeping in between. The Eviction
// API sends one (10 s) when the budget guarding a pod has a status older
// than its spec (status.observedGeneration < metadata.generation: the
// disruption controller has not processed it yet), which would hold a
// pass for minutes per pod. So for a Running and Ready pod guarded by
// exactly one such budget — the case where the API server is certain to
// refuse for that reason — Drain reports the pod Blocked without calling
// the API. Every other refusal comes from the API server itself.
//
// Bare pods (without a controller) and pods with emptyDir volumes are
// evicted like any other: the drain is followed by the deletion of the
// Nodes, which loses them anyway.
func Drain(ctx context.Context, c client.Client, r client.Reader, nodes []string, now time.Time) (*Result, error) {
	res := &Result{}
	budgets := &budgets{r: r, byNamespace: map[string][]policyv1.PodDisruptionBudget{}}
	var errs []error
	for _, node := range dedupe(nodes) {
		pods := &corev1.PodList{}
		if err := r.List(ctx, pods, client.MatchingFields{"spec.nodeName": node}); err != nil {
			return nil, fmt.Errorf("listing pods on node %s: %w", node, err)
		}
		slices.SortFunc(pods.Items, func(a, b corev1.Pod) int {
			return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
		})
		for i := range pods.Items {
			pod := &pods.Items[i]
			if skip(pod) {
				continue
			}
			key := client.ObjectKeyFromObject(pod)
			if pod.DeletionTimestamp != nil {
				res.Terminating = append(res.Terminating, key)
				res.Remaining = append(res.Remaining, key)
				continue
			}
			res.Remaining = append(res.Remaining, key)
			if guarded(pod) {
				matching, err := budgets.matching(ctx, pod)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				if len(matching) == 1 && matching[0].Status.ObservedGeneration < matching[0].Generation {
					pdb := &matching[0]
					res.Blocked = append(res.Blocked, Blocked{
						Pod: key, Node: node, PDB: &types.NamespacedName{Namespace: pdb.Namespace, Name: pdb.Name},
						Message: fmt.Sprintf("The disruption budget %s is not processed yet by the disruption controller "+
							"(status.observedGeneration %d < generation %d): the Eviction API refuses every eviction it guards",
							pdb.Name, pdb.Status.ObservedGeneration, pdb.Generation),
						ObservedAt: now,
					})
					continue
				}
			}
			err := evict(ctx, c, pod)
			switch {
			case err == nil:
				res.Evicted = append(res.Evicted, key)
			case apierrors.IsNotFound(err), apierrors.IsConflict(err):
				// Gone (or replaced by a pod of the same name) since the list.
				res.Remaining = res.Remaining[:len(res.Remaining)-1]
			case apierrors.IsTooManyRequests(err):
				b := Blocked{Pod: key, Node: node, Message: refusal(err), ObservedAt: now}
				matching, lerr := budgets.matching(ctx, pod)
				if lerr != nil {
					errs = append(errs, lerr)
				}
				if len(matching) > 0 {
					b.PDB = &types.NamespacedName{Namespace: matching[0].Namespace, Name: matching[0].Name}
				}
				res.Blocked = append(res.Blocked, b)
			default:
				errs = append(errs, fmt.Errorf("evicting pod %s from node %s: %w", key, node, err))
			}
		}
	}
	res.Done = len(res.Remaining) == 0
	return res, errors.Join(errs...)
}

// guarded reports whether the Eviction API checks budgets for pod: it does
// not for pods that are Pending, finished or terminating, and it may not
// for a pod that is not Ready (unhealthy pods can be evicted without using
// a disruption).
func guarded(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// skip reports whether a drain leaves pod alone: it belongs to a DaemonSet
// (the DaemonSet controller would put it straight back, and it tolerates
// unschedulable Nodes), it is a mirror pod of a static pod (only the
// kubelet's manifest removes it), or it has finished (nothing left to
// disrupt).
func skip(pod *corev1.Pod) bool {
	if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "DaemonSet" {
		return true
	}
	if _, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return true
	}
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// evict asks the API server to evict pod, with the pod's own grace period.
func evict(ctx context.Context, c client.Client, pod *corev1.Pod) error {
	uid := pod.UID
	eviction := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	}
	return c.SubResource("eviction").Create(ctx, pod, eviction)
}

// refusal is the API server's explanation of a refused eviction: the
// status message, followed by the causes the disruption budget gave.
func refusal(err error) string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err.Error()
	}
	s := status.Status()
	msg := s.Message
	if s.Details != nil {
		for _, cause := range s.Details.Causes {
			if cause.Type == policyv1.DisruptionBudgetCause && cause.Message != "" {
				msg += " " + cause.Message
			}
		}
	}
	return msg
}

// budgets lists the PodDisruptionBudgets of a namespace once per pass.
type budgets struct {
	r           client.Reader
	byNamespace map[string][]policyv1.PodDisruptionBudget
}

// matching returns the budgets guarding pod, chosen the way the Eviction
// API chooses them: in the pod's namespace, by label selector, skipping
// budgets whose selector is invalid. The API server refuses to evict a pod
// guarded by more than one budget with a different error (500), so a 429
// comes from exactly one.
func (b *budgets) matching(ctx context.Context, pod *corev1.Pod) ([]policyv1.PodDisruptionBudget, error) {
	all, ok := b.byNamespace[pod.Namespace]
	if !ok {
		list := &policyv1.PodDisruptionBudgetList{}
		if err := b.r.List(ctx, list, client.InNamespace(pod.Namespace)); err != nil {
			return nil, fmt.Errorf("listing PodDisruptionBudgets in namespace %s: %w", pod.Namespace, err)
		}
		all = list.Items
		b.byNamespace[pod.Namespace] = all
	}
	var out []policyv1.PodDisruptionBudget
	for _, pdb := range all {
		selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		if selector.Matches(labels.Set(pod.Labels)) {
			out = append(out, pdb)
		}
	}
	return out, nil
}

// dedupe returns the distinct node names, sorted.
func dedupe(nodes []string) []string {
	out := slices.Clone(nodes)
	slices.Sort(out)
	return slices.Compact(out)
}
