package preflight

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// disruptionBudgets finds the PodDisruptionBudgets guarding Pods on the
// Nodes of the node groups being upgraded (a blue-green group is drained
// by ops-operator, an in-place one by the cloud; both respect budgets). A
// budget that can never allow an eviction — maxUnavailable 0 (or 0%), or
// minAvailable 100% — fails, naming it and the Pods; a budget that
// allows no disruption right now (Pods not healthy, or minAvailable at the
// replica count) warns: the drain waits for it until --drain-timeout.
func disruptionBudgets(ctx context.Context, in Input, nodes map[string][]corev1.Node) (opsv1.PreflightCheck, error) {
	if in.Kube == nil {
		return notChecked(opsv1.PreflightCheckDisruptionBudgets, "no Kubernetes client"), nil
	}
	type guarded struct {
		pdb   policyv1.PodDisruptionBudget
		pods  []string
		group string
	}
	found := map[string]*guarded{}
	budgets := map[string][]policyv1.PodDisruptionBudget{}
	podsChecked := 0
	for _, ng := range in.Spec.NodeGroupUpgrades {
		for _, node := range nodes[ng.NodeGroupName] {
			pods := &corev1.PodList{}
			if err := in.Kube.List(ctx, pods, client.MatchingFields{"spec.nodeName": node.Name}); err != nil {
				return opsv1.PreflightCheck{}, fmt.Errorf("listing pods on node %s: %w", node.Name, err)
			}
			for i := range pods.Items {
				pod := &pods.Items[i]
				if leftAlone(pod) || !evictionGuarded(pod) {
					continue
				}
				podsChecked++
				all, ok := budgets[pod.Namespace]
				if !ok {
					list := &policyv1.PodDisruptionBudgetList{}
					if err := in.Kube.List(ctx, list, client.InNamespace(pod.Namespace)); err != nil {
						return opsv1.PreflightCheck{}, fmt.Errorf("listing PodDisruptionBudgets in namespace %s: %w", pod.Namespace, err)
					}
					all = list.Items
					budgets[pod.Namespace] = all
				}
				for _, pdb := range all {
					sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
					if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
						continue
					}
					key := pdb.Namespace + "/" + pdb.Name
					if found[key] == nil {
						found[key] = &guarded{pdb: pdb, group: ng.NodeGroupName}
					}
					found[key].pods = append(found[key].pods, fmt.Sprintf("%s/%s on node %s", pod.Namespace, pod.Name, node.Name))
				}
			}
		}
	}
	keys := make([]string, 0, len(found))
	for k := range found {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var problems, warnings, passed []string
	for _, k := range keys {
		g := found[k]
		desc := fmt.Sprintf("PodDisruptionBudget %s (%s, disruptionsAllowed %d) guards Pods %s of node group %q",
			k, budgetRule(&g.pdb), g.pdb.Status.DisruptionsAllowed, strings.Join(g.pods, ", "), g.group)
		switch {
		case neverAllows(&g.pdb):
			problems = append(problems, desc+": it never allows an eviction, so the drain cannot finish")
		case g.pdb.Status.DisruptionsAllowed < 1:
			warnings = append(warnings, desc+": it allows no eviction now; the drain waits until it does (or --drain-timeout)")
		default:
			passed = append(passed, desc)
		}
	}
	if len(passed) == 0 && len(problems) == 0 && len(warnings) == 0 {
		passed = append(passed, fmt.Sprintf("no PodDisruptionBudget guards the %d Pods on the node groups being upgraded", podsChecked))
	}
	return check(opsv1.PreflightCheckDisruptionBudgets, problems, warnings, passed,
		"relax the PodDisruptionBudget (maxUnavailable ≥ 1, or minAvailable below the replica count) or scale the workload up before the upgrade"), nil
}

// leftAlone: Pods a drain does not evict (DaemonSet, mirror, finished).
func leftAlone(pod *corev1.Pod) bool {
	if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "DaemonSet" {
		return true
	}
	if _, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return true
	}
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// evictionGuarded: the Eviction API checks budgets only for a Running, Ready Pod
// that is not terminating (as operator/internal/drain sees it).
func evictionGuarded(pod *corev1.Pod) bool {
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

func budgetRule(pdb *policyv1.PodDisruptionBudget) string {
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		return "maxUnavailable " + pdb.Spec.MaxUnavailable.String()
	case pdb.Spec.MinAvailable != nil:
		return "minAvailable " + pdb.Spec.MinAvailable.String()
	}
	return "no rule"
}

// neverAllows reports whether a budget allows no eviction whatever the
// Pods' health and number: maxUnavailable 0 or 0%, or minAvailable 100%.
// An integer minAvailable at or above the Pods it expects also blocks,
// but scaling the workload up (or an autoscaler) lifts it: that budget
// allows no disruption now and warns.
func neverAllows(pdb *policyv1.PodDisruptionBudget) bool {
	zero := func(v *intstr.IntOrString) bool {
		return v != nil && ((v.Type == intstr.Int && v.IntVal <= 0) || (v.Type == intstr.String && v.StrVal == "0%"))
	}
	if zero(pdb.Spec.MaxUnavailable) {
		return true
	}
	m := pdb.Spec.MinAvailable
	return m != nil && m.Type == intstr.String && m.StrVal == "100%"
}
