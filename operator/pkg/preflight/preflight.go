// Package preflight is the one set of checks made before a
// ClusterUpgradeOperation changes anything: ops-apiserver runs it on demand
// (POST /ops/api/v1/upgradeOperations/preflight) and ops-operator runs it
// before the first step, so both report the same checks with the same
// words. Every call it makes is a read: the cloud's Describe/List calls and
// Kubernetes reads (Nodes, Pods, PodDisruptionBudgets, Helm release Secrets
// and the metadata of objects of removed API versions).
//
// A check ends pass, warn or fail. fail means the upgrade would fail or
// stall (the operator does not start it); warn means it was not checked
// on this provider or may slow the upgrade down.
package preflight

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
)

// Input is what the checks look at.
type Input struct {
	Spec *opsv1.ClusterUpgradeOperationSpec
	// Target is the version the steps upgrade to (on ACK, the resolved
	// full version).
	Target   string
	Provider cloud.Provider
	Ref      cloud.ClusterRef
	// Kube reads the cluster being upgraded, uncached (field selectors on
	// Pods). nil: the Kubernetes-side checks warn "not checked".
	Kube client.Reader
	// HelmNamespaces are the namespaces whose Helm release Secrets are
	// read (DefaultHelmNamespaces for both binaries); empty: none.
	HelmNamespaces []string
	// Now is the report's time.
	Now time.Time
}

// DefaultHelmNamespaces are the namespaces whose Helm releases
// ops-operator and ops-apiserver read: the VMCluster namespace, where the
// components' HelmReleases keep their releases (the chart lets both list
// Secrets there and nowhere else).
var DefaultHelmNamespaces = []string{opsv1.VMClusterNamespace}

// Run makes every check and returns the report. An error is one that
// kept a check from being made (a cloud or Kubernetes API error): the
// caller retries it, or, for a classified cloud error, reports it.
func Run(ctx context.Context, in Input) (*opsv1.PreflightReport, error) {
	cluster, err := in.Provider.DescribeCluster(ctx, in.Ref)
	if err != nil {
		return nil, err
	}
	groups, err := in.Provider.ListNodeGroups(ctx, in.Ref)
	if err != nil {
		return nil, err
	}
	var addons []cloud.Addon
	if len(in.Spec.ClusterAddons) > 0 {
		if addons, err = in.Provider.ListAddons(ctx, in.Ref); err != nil {
			return nil, err
		}
	}
	nodes, err := groupNodes(ctx, in, groups)
	if err != nil {
		return nil, err
	}
	checks := []opsv1.PreflightCheck{versionSkew(in, cluster, groups, nodes), nodeGroupsExist(in.Spec, groups), addonsExist(in.Spec, addons)}
	c, err := addonCompatibility(ctx, in)
	if err != nil {
		return nil, err
	}
	checks = append(checks, c)
	if c, err = disruptionBudgets(ctx, in, nodes); err != nil {
		return nil, err
	}
	checks = append(checks, c)
	if c, err = removedAPIs(ctx, in, cluster.Version); err != nil {
		return nil, err
	}
	checks = append(checks, c, capacity(ctx, in, groups))
	now := metav1.NewTime(in.Now)
	rep := &opsv1.PreflightReport{Result: opsv1.PreflightPass, Time: &now, TargetVersion: in.Target, Checks: checks}
	for _, c := range checks {
		rep.Result = worse(rep.Result, c.Result)
	}
	return rep, nil
}

// Failures returns the evidence of the failed checks, joined: the reason
// an operation does not start.
func Failures(rep *opsv1.PreflightReport) string {
	var out []string
	for _, c := range rep.Checks {
		if c.Result != opsv1.PreflightFail {
			continue
		}
		for _, e := range c.Evidence {
			if !strings.HasPrefix(e, warningPrefix) {
				out = append(out, e)
			}
		}
	}
	return strings.Join(out, "; ")
}

func worse(a, b opsv1.PreflightResult) opsv1.PreflightResult {
	rank := map[opsv1.PreflightResult]int{opsv1.PreflightPass: 0, opsv1.PreflightWarn: 1, opsv1.PreflightFail: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// warningPrefix marks a warning in the evidence of a failed check.
const warningPrefix = "warning: "

// check builds a check from its problems (fail), warnings and what passed.
func check(name string, problems, warnings, passed []string, hint string) opsv1.PreflightCheck {
	c := opsv1.PreflightCheck{Name: name, Result: opsv1.PreflightPass, Evidence: passed}
	switch {
	case len(problems) > 0:
		c.Result, c.Evidence, c.Hint = opsv1.PreflightFail, problems, hint
		for _, w := range warnings {
			c.Evidence = append(c.Evidence, warningPrefix+w)
		}
	case len(warnings) > 0:
		c.Result, c.Evidence, c.Hint = opsv1.PreflightWarn, warnings, hint
	}
	if len(c.Evidence) > 64 {
		c.Evidence = append(c.Evidence[:63], fmt.Sprintf("… and %d more", len(c.Evidence)-63))
	}
	return c
}

// ControlPlaneSkew says what is wrong with moving a control plane from
// current to target, or "". The rule every provider shares: the same minor
// or one minor ahead, never back.
func ControlPlaneSkew(current, target string) string {
	cMaj, cMin, ok1 := cloud.MajorMinor(current)
	tMaj, tMin, ok2 := cloud.MajorMinor(target)
	if !ok1 || !ok2 {
		return fmt.Sprintf("cannot compare versions %q and %q", current, target)
	}
	if tMaj != cMaj || tMin < cMin {
		return fmt.Sprintf("target version %s is older than the cluster's %s", target, current)
	}
	if tMin > cMin+1 {
		return fmt.Sprintf("target version %s is more than one minor version ahead of the cluster's %s; upgrade one minor version at a time", target, current)
	}
	return ""
}

// KubeletSkew is how many minors a kubelet may be older than the API
// server at version apiserver, per the Kubernetes version skew policy
// (https://kubernetes.io/releases/version-skew-policy/): three from 1.28
// on, two before.
func KubeletSkew(apiserver string) int {
	if _, m, ok := cloud.MajorMinor(apiserver); ok && m < 28 {
		return 2
	}
	return 3
}

// kubeletSkew says what is wrong with a kubelet at version against an API
// server at target, or "".
func kubeletSkew(what, version, target string) string {
	_, kMin, ok1 := cloud.MajorMinor(version)
	_, tMin, ok2 := cloud.MajorMinor(target)
	if !ok1 || !ok2 {
		return ""
	}
	if kMin > tMin {
		return fmt.Sprintf("%s runs kubelet %s, newer than the target %s", what, version, target)
	}
	if allowed := KubeletSkew(target); tMin-kMin > allowed {
		return fmt.Sprintf("%s runs kubelet %s, more than %d minor versions older than the target %s (Kubernetes version skew policy)", what, version, allowed, target)
	}
	return ""
}

// groupNodes lists each node group's Nodes (nil map without Kube).
func groupNodes(ctx context.Context, in Input, groups []cloud.NodeGroup) (map[string][]corev1.Node, error) {
	if in.Kube == nil {
		return nil, nil
	}
	out := map[string][]corev1.Node{}
	for _, g := range groups {
		sel, err := cloud.NodeSelectorFor(ctx, in.Provider, in.Ref, g.Name)
		if err != nil {
			return nil, err
		}
		list := &corev1.NodeList{}
		if err := in.Kube.List(ctx, list, client.MatchingLabels(sel)); err != nil {
			return nil, fmt.Errorf("listing the Nodes of node group %s: %w", g.Name, err)
		}
		sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
		out[g.Name] = list.Items
	}
	return out, nil
}

// versionSkew: the control plane may move one minor; every node group's
// kubelet (the cloud's group version and its Nodes' kubelets) must stay
// within the skew policy of the target once the control plane is there,
// as the groups are upgraded after it.
func versionSkew(in Input, cluster *cloud.Cluster, groups []cloud.NodeGroup, nodes map[string][]corev1.Node) opsv1.PreflightCheck {
	var problems, passed []string
	if msg := ControlPlaneSkew(cluster.Version, in.Target); msg != "" {
		problems = append(problems, msg)
	} else {
		passed = append(passed, fmt.Sprintf("control plane %s → %s", cluster.Version, in.Target))
	}
	for _, g := range groups {
		if msg := kubeletSkew(fmt.Sprintf("node group %q", g.Name), g.Version, in.Target); msg != "" {
			problems = append(problems, msg)
			continue
		}
		for _, n := range nodes[g.Name] {
			if msg := kubeletSkew(fmt.Sprintf("node %s of node group %q", n.Name, g.Name), n.Status.NodeInfo.KubeletVersion, in.Target); msg != "" {
				problems = append(problems, msg)
			}
		}
		passed = append(passed, fmt.Sprintf("node group %q at %s (%d nodes checked)", g.Name, g.Version, len(nodes[g.Name])))
	}
	return check(opsv1.PreflightCheckVersionSkew, problems, nil, passed,
		"upgrade the control plane one minor version at a time, and node groups older than the skew policy allows before (or in) this operation")
}

func nodeGroupsExist(spec *opsv1.ClusterUpgradeOperationSpec, groups []cloud.NodeGroup) opsv1.PreflightCheck {
	byName := map[string]bool{}
	for _, g := range groups {
		byName[g.Name] = true
	}
	var problems, passed []string
	for _, ng := range spec.NodeGroupUpgrades {
		if !byName[ng.NodeGroupName] {
			problems = append(problems, fmt.Sprintf("node group %q does not exist", ng.NodeGroupName))
		} else {
			passed = append(passed, fmt.Sprintf("node group %q exists", ng.NodeGroupName))
		}
		if ng.NewNodeGroupName != "" {
			if byName[ng.NewNodeGroupName] {
				problems = append(problems, fmt.Sprintf("new node group name %q is already taken", ng.NewNodeGroupName))
			} else {
				passed = append(passed, fmt.Sprintf("new node group name %q is free", ng.NewNodeGroupName))
			}
		}
	}
	return check(opsv1.PreflightCheckNodeGroups, problems, nil, passed,
		"name existing node groups (GET /ops/api/v1/nodeGroups) and a newNodeGroupName no group has")
}

func addonsExist(spec *opsv1.ClusterUpgradeOperationSpec, addons []cloud.Addon) opsv1.PreflightCheck {
	byName := map[string]cloud.Addon{}
	for _, a := range addons {
		byName[a.Name] = a
	}
	var problems, passed []string
	for _, want := range spec.ClusterAddons {
		a, ok := byName[want.Name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("addon %q is not installed", want.Name))
		case a.Version != want.Version && !slices.Contains(a.AvailableVersions, want.Version):
			problems = append(problems, fmt.Sprintf("addon %q has no version %q (available: %s)", want.Name, want.Version, strings.Join(a.AvailableVersions, ", ")))
		default:
			passed = append(passed, fmt.Sprintf("addon %q at %s offers %s", want.Name, a.Version, want.Version))
		}
	}
	return check(opsv1.PreflightCheckAddons, problems, nil, passed,
		"name installed addons and a version they offer (GET /ops/api/v1/addons)")
}

// addonCompatibility asks a cloud.AddonCompatibility provider which
// versions of each requested addon run on the target version.
func addonCompatibility(ctx context.Context, in Input) (opsv1.PreflightCheck, error) {
	if len(in.Spec.ClusterAddons) == 0 {
		return check(opsv1.PreflightCheckAddonCompatibility, nil, nil, []string{"no addon is updated"}, ""), nil
	}
	compat, ok := in.Provider.(cloud.AddonCompatibility)
	if !ok {
		return check(opsv1.PreflightCheckAddonCompatibility, nil,
			[]string{fmt.Sprintf("not checked: %s does not expose which addon versions run on Kubernetes %s", in.Provider.Name(), in.Target)}, nil,
			"check the provider's addon release notes for the target version"), nil
	}
	var problems, passed []string
	for _, want := range in.Spec.ClusterAddons {
		versions, err := compat.AddonVersionsFor(ctx, in.Ref, want.Name, in.Target)
		if err != nil {
			return opsv1.PreflightCheck{}, err
		}
		if slices.Contains(versions, want.Version) {
			passed = append(passed, fmt.Sprintf("addon %q %s runs on Kubernetes %s", want.Name, want.Version, in.Target))
		} else {
			problems = append(problems, fmt.Sprintf("addon %q %s is not compatible with Kubernetes %s (compatible: %s)", want.Name, want.Version, in.Target, strings.Join(versions, ", ")))
		}
	}
	return check(opsv1.PreflightCheckAddonCompatibility, problems, nil, passed,
		"choose an addon version the provider lists as compatible with the target version"), nil
}

// capacity: a blue-green group needs a second group of its size for the
// duration of the move.
func capacity(ctx context.Context, in Input, groups []cloud.NodeGroup) opsv1.PreflightCheck {
	byName := map[string]cloud.NodeGroup{}
	for _, g := range groups {
		byName[g.Name] = g
	}
	var need []string
	for _, ng := range in.Spec.NodeGroupUpgrades {
		if ng.Strategy != opsv1.StrategyBlueGreen {
			continue
		}
		g, ok := byName[ng.NodeGroupName]
		if !ok {
			continue
		}
		need = append(need, fmt.Sprintf("node group %q needs %d more nodes (%s) while %q is created", g.Name, g.DesiredSize, strings.Join(g.InstanceTypes, ", "), ng.NewNodeGroupName))
	}
	if len(need) == 0 {
		return check(opsv1.PreflightCheckCapacity, nil, nil, []string{"no blue-green node group"}, "")
	}
	return check(opsv1.PreflightCheckCapacity, nil,
		append([]string{fmt.Sprintf("not checked: %s exposes no quota or instance limits to ops-server", in.Provider.Name())}, need...), nil,
		"make sure the account's quota (instances, vCPUs, IP addresses) holds the extra nodes")
}

// notChecked is the warning of a Kubernetes-side check made without a
// Kubernetes client.
func notChecked(name, what string) opsv1.PreflightCheck {
	return check(name, nil, []string{"not checked: " + what}, nil, "")
}
