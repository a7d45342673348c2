package upgrade

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/drain"
	"github.com/tidbcloud/ops-server/operator/internal/exclusion"
	"github.com/tidbcloud/ops-server/operator/internal/outcome"
	"github.com/tidbcloud/ops-server/operator/internal/vmstorage"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/preflight"
)

// preflight checks the cloud before the first step: the cluster exists,
// the target version is reachable from the current one, the node groups
// exist, the new node-group names are free, the addons and their versions
// exist. A failure ends the operation Failed before any change.
func (r *Reconciler) preflight(ctx context.Context, s *scope) error {
	target, refusal, err := resolveTargetVersion(ctx, s.provider, s.ref, s.op)
	if err != nil {
		return r.preflightError(s, err)
	}
	if refusal != "" {
		r.fail(s.op, "Preflight: "+refusal)
		return nil
	}
	s.op.Status.ResolvedTargetVersion = target
	rep, err := r.runPreflight(ctx, s, target)
	if err != nil {
		return r.preflightError(s, err)
	}
	if rep.Result == opsv1.PreflightFail {
		r.fail(s.op, "Preflight: "+preflight.Failures(rep))
		return nil
	}
	s.op.Status.StartTime = r.now()
	s.op.Status.Phase = opsv1.UpgradePhaseRunning
	// Recorded at once: the other operations of the cluster must see
	// this one started before its first step (see package exclusion).
	s.observedOnly = false
	r.event(s.op, "Normal", "PreflightPassed", "Preflight %s; upgrading cluster %s to %s", rep.Result, s.op.Spec.K8sClusterName, target)
	return nil
}

func (r *Reconciler) preflightError(s *scope, err error) error {
	if !outcome.IsTerminal(err) {
		return r.handleError(s, nil, err)
	}
	r.fail(s.op, "Preflight: "+err.Error())
	return nil
}

// versionSkew says what is wrong with moving the control plane from
// current to target, or "" (preflight.ControlPlaneSkew).
func versionSkew(current, target string) string { return preflight.ControlPlaneSkew(current, target) }

// versionSatisfies reports whether a cluster at current is already at
// target: the same major.minor when target names only those (1.30), the
// exact version otherwise (1.30.2, 1.31.1-aliyun.1).
func versionSatisfies(current, target string) bool {
	current, target = strings.TrimPrefix(current, "v"), strings.TrimPrefix(target, "v")
	if current == target {
		return true
	}
	if strings.Count(target, ".") != 1 {
		return false
	}
	cMaj, cMin, ok1 := cloud.MajorMinor(current)
	tMaj, tMin, ok2 := cloud.MajorMinor(target)
	return ok1 && ok2 && cMaj == tMaj && cMin == tMin
}

// poll checks the cloud operation a step waits on.
func (r *Reconciler) poll(ctx context.Context, s *scope, step *opsv1.UpgradeStep) error {
	st, err := s.provider.PollOperation(ctx, s.ref, step.OperationID)
	if err != nil {
		return r.handleError(s, step, err)
	}
	switch st.State {
	case cloud.OperationSucceeded:
		r.succeedStep(s.op, step, "Cloud operation "+step.OperationID+" succeeded")
	case cloud.OperationFailed:
		r.failStep(s.op, step, fmt.Sprintf("Cloud operation %s failed: %s", step.OperationID, st.Message))
		r.fail(s.op, step.Message)
	default:
		s.requeue = r.Options.PollInterval
		if st.RetryAfter > 0 && st.RetryAfter < s.requeue {
			s.requeue = st.RetryAfter
		}
		step.Message = "Waiting for cloud operation " + step.OperationID
	}
	return nil
}

// stepFunc starts a step, or makes one more pass of a Kubernetes-side
// one: one function per action, as helm-controller has one action
// reconciler per release action.
type stepFunc func(r *Reconciler, ctx context.Context, s *scope, step *opsv1.UpgradeStep) error

// stepFuncs maps every step action to its function.
var stepFuncs = map[opsv1.StepAction]stepFunc{
	opsv1.ActionUpgradeControlPlane: (*Reconciler).upgradeControlPlane,
	opsv1.ActionUpdateAddon:         (*Reconciler).updateAddon,
	opsv1.ActionUpgradeNodeGroup:    (*Reconciler).upgradeNodeGroup,
	opsv1.ActionCreateNodeGroup:     (*Reconciler).createNodeGroup,
	opsv1.ActionDeleteNodeGroup:     (*Reconciler).deleteNodeGroup,
	opsv1.ActionWaitNodesReady:      (*Reconciler).waitNodesReady,
	opsv1.ActionRolloutVMStorage:    (*Reconciler).rolloutVMStorage,
	opsv1.ActionCordonNodes:         (*Reconciler).cordonNodes,
	opsv1.ActionDrainNodes:          (*Reconciler).drain,
	opsv1.ActionBackupVMStorage:     (*Reconciler).backupVMStorage,
}

// runStep starts a step, or makes one more pass of a Kubernetes-side one.
func (r *Reconciler) runStep(ctx context.Context, s *scope, step *opsv1.UpgradeStep) error {
	f, ok := stepFuncs[step.Action]
	if !ok {
		return r.handleError(s, step, outcome.Terminal(fmt.Errorf("unknown step action %q", step.Action)))
	}
	// Errors a step function returned without handling them (Kubernetes
	// API errors, mostly) go through the one policy too.
	if err := f(r, ctx, s, step); err != nil {
		return r.handleError(s, step, err)
	}
	return nil
}

func (r *Reconciler) upgradeControlPlane(ctx context.Context, s *scope, step *opsv1.UpgradeStep) error {
	cluster, err := s.provider.DescribeCluster(ctx, s.ref)
	if err != nil {
		return r.handleError(s, step, err)
	}
	if versionSatisfies(cluster.Version, targetVersion(s.op)) {
		r.startStep(s.op, step)
		r.succeedStep(s.op, step, "Control plane already at "+cluster.Version)
		return nil
	}
	return r.startCloud(s, step, func(tok string) (string, error) {
		return s.provider.StartControlPlaneUpgrade(ctx, s.ref, targetVersion(s.op), tok)
	})
}

func (r *Reconciler) updateAddon(ctx context.Context, s *scope, step *opsv1.UpgradeStep) error {
	spec := &s.op.Spec
	want := addonOf(spec, step)
	if want == nil {
		return r.handleError(s, step, cloud.Errorf(cloud.Permanent, s.provider.Name(), "", "addon %q is not in the spec", step.Target))
	}
	return r.startCloud(s, step, func(tok string) (string, error) {
		return s.provider.StartAddonUpdate(ctx, s.ref, cloud.AddonUpdate{Name: want.Name, Version: want.Version, ResolveConflicts: string(want.ResolveConflicts)}, tok)
	})
}

func (r *Reconciler) upgradeNodeGroup(ctx context.Context, s *scope, step *opsv1.UpgradeStep) error {
	return r.startCloud(s, step, func(tok string) (string, error) {
		return s.provider.StartNodeGroupUpgrade(ctx, s.ref, step.Target, targetVersion(s.op), tok)
	})
}

func (r *Reconciler) createNodeGroup(ctx context.Context, s *scope, step *opsv1.UpgradeStep) error {
	spec := &s.op.Spec
	ng := nodeGroupOf(spec, step)
	groups, err := s.provider.ListNodeGroups(ctx, s.ref)
	if err != nil {
		return r.handleError(s, step, err)
	}
	var old *cloud.NodeGroup
	for i := range groups {
		if groups[i].Name == ng.NodeGroupName {
			old = &groups[i]
		}
	}
	if old == nil {
		return r.handleError(s, step, cloud.Errorf(cloud.NotFound, s.provider.Name(), "", "node group %q to clone does not exist", ng.NodeGroupName))
	}
	clone := *old
	clone.Name, clone.Version, clone.Status = ng.NewNodeGroupName, targetVersion(s.op), ""
	return r.startCloud(s, step, func(tok string) (string, error) {
		return s.provider.StartCreateNodeGroup(ctx, s.ref, clone, tok)
	})
}

func (r *Reconciler) deleteNodeGroup(ctx context.Context, s *scope, step *opsv1.UpgradeStep) error {
	id, err := s.provider.StartDeleteNodeGroup(ctx, s.ref, step.Target, token(s.op, step.ID))
	if cloud.IsNotFound(err) {
		// Already gone: deleted by an earlier attempt whose answer was
		// lost (a crash), or by someone else. Either way, done.
		r.startStep(s.op, step)
		r.succeedStep(s.op, step, "Node group "+step.Target+" is already deleted")
		return nil
	}
	return r.startCloud(s, step, func(string) (string, error) { return id, err })
}

func (r *Reconciler) cordonNodes(ctx context.Context, s *scope, step *opsv1.UpgradeStep) error {
	r.startStep(s.op, step)
	nodes, err := r.groupNodeList(ctx, s, step.Target)
	if err != nil {
		return r.handleError(s, step, err)
	}
	if len(nodes) == 0 {
		// Draining nothing and then deleting the group would take its
		// pods down with it: a group the cloud still sizes above zero
		// must show its Nodes.
		groups, err := s.provider.ListNodeGroups(ctx, s.ref)
		if err != nil {
			return r.handleError(s, step, err)
		}
		for _, g := range groups {
			if g.Name == step.Target && g.DesiredSize > 0 {
				r.failStep(s.op, step, fmt.Sprintf("Node group %s has %d nodes in the cloud but none is found in Kubernetes; refusing to delete it undrained", g.Name, g.DesiredSize))
				r.fail(s.op, step.Message)
				return nil
			}
		}
	}
	return r.cordonStep(ctx, s, step, nodes)
}

// startCloud starts a step's cloud operation and records its id. The id is
// in status before the operator waits on it; the token makes a repeat of
// the call (after a crash before the status patch) return the same id.
func (r *Reconciler) startCloud(s *scope, step *opsv1.UpgradeStep, start func(token string) (string, error)) error {
	id, err := start(token(s.op, step.ID))
	if err != nil {
		return r.handleError(s, step, err)
	}
	r.startStep(s.op, step)
	step.OperationID = id
	step.Message = "Started cloud operation " + id
	s.requeue = r.Options.PollInterval
	return nil
}

// groupNodeList lists the Nodes of a node group by the provider's
// selector (a label naming the group, or ACK's node-pool id).
func (r *Reconciler) groupNodeList(ctx context.Context, s *scope, group string) ([]corev1.Node, error) {
	sel, err := cloud.NodeSelectorFor(ctx, s.provider, s.ref, group)
	if err != nil {
		return nil, err
	}
	list := &corev1.NodeList{}
	if err := r.APIReader.List(ctx, list, ctrl.MatchingLabels(sel)); err != nil {
		return nil, fmt.Errorf("listing nodes of node group %s: %w", group, err)
	}
	return list.Items, nil
}

// groupNodes returns the names of a node group's Nodes.
func (r *Reconciler) groupNodes(ctx context.Context, s *scope, group string) ([]string, error) {
	nodes, err := r.groupNodeList(ctx, s, group)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	return names, nil
}

func (r *Reconciler) waitNodesReady(ctx context.Context, s *scope, step *opsv1.UpgradeStep) error {
	s.observedOnly = true
	r.startStep(s.op, step)
	groups, err := s.provider.ListNodeGroups(ctx, s.ref)
	if err != nil {
		return r.handleError(s, step, err)
	}
	want := int32(-1)
	for _, g := range groups {
		if g.Name == step.Target {
			want = g.DesiredSize
		}
	}
	nodes, err := r.groupNodeList(ctx, s, step.Target)
	if err != nil {
		return r.handleError(s, step, err)
	}
	ready := int32(0)
	for _, n := range nodes {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	if want >= 0 && ready >= want && int32(len(nodes)) >= want {
		r.succeedStep(s.op, step, fmt.Sprintf("%d/%d nodes of node group %s are Ready", ready, want, step.Target))
		return nil
	}
	msg := fmt.Sprintf("%d/%d nodes of node group %s are Ready", ready, want, step.Target)
	if r.timedOut(step, r.Options.NodesReadyTimeout) {
		r.failStep(s.op, step, "Timed out: "+msg)
		r.fail(s.op, step.Message)
		return nil
	}
	step.Message = "Waiting: " + msg
	s.blocked = &opsv1.BlockedBy{StepID: step.ID, Reason: opsv1.BlockedByNodesNotReady, Message: msg}
	s.requeue = r.Options.PollInterval
	return nil
}

// rolloutVMStorage merge-patches vmClusterHelmValues into the VMCluster
// (once: the resulting generation is kept in the step's operationID) and
// waits until the vmstorage StatefulSet has rolled out and, when the patch
// changed the VMCluster, every vmstorage pod runs on the new node group.
//
// The VMCluster is the node group's vmCluster (observability/vmcluster when
// omitted). When a Flux HelmRelease installed it, the values are recorded on
// that HelmRelease first (vmstorage.RecordOverlay), so that later Helm
// upgrades keep vmstorage where the rollout put it. A VMCluster that no
// longer exists fails the step, naming what had not converged.
func (r *Reconciler) rolloutVMStorage(ctx context.Context, s *scope, step *opsv1.UpgradeStep) error {
	ng := nodeGroupOf(&s.op.Spec, step)
	key := rolloutKey(ng)
	if step.Phase != opsv1.StepPhaseRunning {
		// Not while a backup of the VMCluster runs: its snapshots are
		// taken on the vmstorage pods the rollout replaces. Once this
		// step is Running, new backups of the VMCluster wait for it
		// instead (package exclusion).
		backup, err := exclusion.RunningBackup(ctx, r.APIReader, key)
		if err != nil {
			return err
		}
		op, err := exclusion.ActiveOperation(ctx, r.APIReader, key)
		if err != nil {
			return err
		}
		if backup == "" && op != "" {
			msg := fmt.Sprintf("VMClusterOperation %s of VMCluster %s is running; the vmstorage rollout starts when it finished", op, key)
			step.Message = "Waiting: " + msg
			s.blocked = &opsv1.BlockedBy{StepID: step.ID, Reason: opsv1.WaitingForOperationReason, Message: msg}
			s.requeue = r.Options.PollInterval
			s.observedOnly = true
			return nil
		}
		if backup != "" {
			msg := fmt.Sprintf("ClusterBackup %s of VMCluster %s is running; the vmstorage rollout starts when it finished", backup, key)
			step.Message = "Waiting: " + msg
			s.blocked = &opsv1.BlockedBy{StepID: step.ID, Reason: opsv1.WaitingForBackupReason, Message: msg}
			s.requeue = r.Options.PollInterval
			s.observedOnly = true
			return nil
		}
		// Nor while a restore of it runs (exclusion/restore.go).
		restore, err := exclusion.ActiveRestore(ctx, r.APIReader, key, nil)
		if err != nil {
			return err
		}
		if restore != "" {
			msg := fmt.Sprintf("ClusterRestore %s of VMCluster %s is running; the vmstorage rollout starts when it finished", restore, key)
			step.Message = "Waiting: " + msg
			s.blocked = &opsv1.BlockedBy{StepID: step.ID, Reason: opsv1.WaitingForBackupReason, Message: msg}
			s.requeue = r.Options.PollInterval
			s.observedOnly = true
			return nil
		}
	}
	r.startStep(s.op, step)
	gen, changed, ok := parseRolloutMarker(step.OperationID)
	if !ok {
		// Defence in depth: the CRD and preflight refuse these values
		// already; nothing outside the allowlist is ever patched.
		if problems := ng.VMClusterHelmValues.Validate(); len(problems) > 0 {
			msg := "vmClusterHelmValues: " + describeViolations(problems)
			r.failStep(s.op, step, msg)
			r.failInvalid(s.op, msg)
			return nil
		}
		overlay := []byte("{}")
		if len(ng.VMClusterHelmValues) > 0 {
			b, err := json.Marshal(ng.VMClusterHelmValues)
			if err != nil {
				return fmt.Errorf("encoding vmClusterHelmValues: %w", err)
			}
			overlay = b
		}
		if err := r.recordOverlay(ctx, s, key, overlay); err != nil {
			if apierrors.IsNotFound(err) {
				return r.failTargetGone(s, step, key)
			}
			return err
		}
		var err error
		gen, changed, err = vmstorage.PatchVMCluster(ctx, r.Client, key, overlay)
		if apierrors.IsNotFound(err) {
			return r.failTargetGone(s, step, key)
		}
		if err != nil {
			return fmt.Errorf("patching VMCluster %s: %w", key, err)
		}
		// Not a cloud operation: the marker only records what the patch
		// did, so a restarted operator waits for the same generation.
		step.OperationID = rolloutMarker(gen, changed)
		r.event(s.op, "Normal", "VMClusterPatched", "Patched VMCluster %s (generation %d, changed %t)", key, gen, changed)
	}
	stsNS, stsName := ng.VMStorageStatefulSet()
	// Placement on the new group is required whenever the values change
	// something — not only when this reconcile's patch did: after a crash
	// between the patch and the status write, the repeated patch changes
	// nothing, yet the pods must still move.
	requirePlacement := changed || !emptyObject(ng.VMClusterHelmValues)
	sel, err := cloud.NodeSelectorFor(ctx, s.provider, s.ref, ng.NewNodeGroupName)
	if err != nil {
		return r.handleError(s, step, err)
	}
	// The label naming the group: the provider's node-group label when the
	// selector has it (the mock's also names the simulated cluster), else
	// the selector's one label (ACK's node-pool id).
	label, value := s.provider.NodeGroupLabel(), ng.NewNodeGroupName
	if v, ok := sel[label]; ok {
		value = v
	} else {
		for k, v := range sel {
			label, value = k, v
		}
	}
	ro, err := vmstorage.RolloutStatus(ctx, r.APIReader, key, gen, types.NamespacedName{Namespace: stsNS, Name: stsName},
		label, value, requirePlacement)
	if apierrors.IsNotFound(err) {
		return r.failTargetGone(s, step, key)
	}
	if err != nil {
		return err
	}
	if ro.Done {
		r.succeedStep(s.op, step, "VMStorage rolled out: "+ro.Message)
		return nil
	}
	if r.timedOut(step, r.Options.RolloutTimeout) {
		r.failStep(s.op, step, "Timed out waiting for the VMStorage rollout: "+ro.Message)
		r.fail(s.op, step.Message)
		return nil
	}
	step.Message = "Waiting: " + ro.Message
	s.blocked = &opsv1.BlockedBy{StepID: step.ID, Reason: opsv1.BlockedByVMClusterNotOperational, Message: ro.Message}
	s.requeue = r.Options.PollInterval
	return nil
}

// rolloutKey is the VMCluster a node group's VMStorage rollout patches.
func rolloutKey(ng *opsv1.NodeGroupUpgrade) types.NamespacedName {
	ns, name := ng.RolloutVMCluster()
	return types.NamespacedName{Namespace: ns, Name: name}
}

// recordOverlay records the rollout's values on the Flux HelmRelease that
// installed the VMCluster, if one did (see vmstorage.RecordOverlay). A
// VMCluster that Helm installed without Flux gets a Warning Event: its next
// Helm upgrade may undo the move.
func (r *Reconciler) recordOverlay(ctx context.Context, s *scope, key types.NamespacedName, overlay []byte) error {
	vmc := vmstorage.NewVMCluster()
	if err := r.APIReader.Get(ctx, key, vmc); err != nil {
		return err
	}
	hr, err := vmstorage.OwningHelmRelease(ctx, r.APIReader, vmc)
	if err != nil {
		return err
	}
	if hr == nil {
		if vmc.GetLabels()["app.kubernetes.io/managed-by"] == "Helm" {
			r.event(s.op, "Warning", "OverlayNotRecorded", "VMCluster %s is installed by Helm but by no Flux HelmRelease: a later Helm upgrade may move vmstorage back; add vmClusterHelmValues to its values", key)
		}
		return nil
	}
	hrKey := types.NamespacedName{Namespace: hr.GetNamespace(), Name: hr.GetName()}
	changed, err := vmstorage.RecordOverlay(ctx, r.Client, hrKey, key.Name, overlay)
	if err != nil {
		return err
	}
	if changed {
		r.event(s.op, "Normal", "OverlayRecorded", "Recorded vmClusterHelmValues on HelmRelease %s (post-renderer %q) so that later Helm upgrades keep vmstorage on the new node group", hrKey, vmstorage.PostRendererMarker)
	}
	return nil
}

// failTargetGone fails a VMStorage rollout whose VMCluster no longer
// exists, with what had not converged when it was last seen.
func (r *Reconciler) failTargetGone(s *scope, step *opsv1.UpgradeStep, key types.NamespacedName) error {
	msg := fmt.Sprintf("VMCluster %s does not exist (deleted during the rollout)", key)
	if last := strings.TrimPrefix(step.Message, "Waiting: "); last != "" {
		msg += "; not converged: " + last
	}
	r.failStep(s.op, step, msg)
	r.failWith(s.op, opsv1.VMClusterNotFoundReason, msg)
	return nil
}

// checkRolloutTargets finds the VMClusters of the spec's VMStorage rollouts
// that do not exist or are being deleted: a message naming them, "" when
// all exist. It runs before
// the preflight's first cloud call.
func (r *Reconciler) checkRolloutTargets(ctx context.Context, spec *opsv1.ClusterUpgradeOperationSpec) (string, error) {
	var missing []string
	for i := range spec.NodeGroupUpgrades {
		ng := &spec.NodeGroupUpgrades[i]
		if !ng.RequiresVMStorageRollout {
			continue
		}
		key := rolloutKey(ng)
		vmc := vmstorage.NewVMCluster()
		err := r.APIReader.Get(ctx, key, vmc)
		switch {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			missing = append(missing, fmt.Sprintf("nodeGroupUpgrades[%d].vmCluster: VMCluster %s does not exist", i, key))
		case err != nil:
			return "", fmt.Errorf("getting VMCluster %s: %w", key, err)
		case vmc.GetDeletionTimestamp() != nil:
			missing = append(missing, fmt.Sprintf("nodeGroupUpgrades[%d].vmCluster: VMCluster %s is being deleted", i, key))
		}
	}
	return strings.Join(missing, "; "), nil
}

// emptyObject reports whether the values are absent or {}.
func emptyObject(v opsv1.VMClusterHelmValues) bool {
	return len(v) == 0
}

// validateSpec finds what the CRD should have refused but an object
// stored before its rules (or without them) may hold: vmClusterHelmValues
// outside the allowlist. "" when nothing.
func validateSpec(spec *opsv1.ClusterUpgradeOperationSpec) string {
	var problems []string
	for i := range spec.NodeGroupUpgrades {
		ng := &spec.NodeGroupUpgrades[i]
		if p := ng.VMClusterHelmValues.Validate(); len(p) > 0 {
			problems = append(problems, fmt.Sprintf("nodeGroupUpgrades[%d].vmClusterHelmValues: %s", i, describeViolations(p)))
		}
	}
	return strings.Join(problems, "; ")
}

// validateTargets finds the rollout targets outside the namespaces an
// operation may reach: its own and observability (the default target's).
// The chart's ValidatingAdmissionPolicy refuses the same at admission; this
// is the check for a cluster without it. "" when none.
func validateTargets(op *opsv1.ClusterUpgradeOperation) string {
	var problems []string
	for i := range op.Spec.NodeGroupUpgrades {
		ns, name := op.Spec.NodeGroupUpgrades[i].RolloutVMCluster()
		if name != "" && ns != op.Namespace && ns != opsv1.VMClusterNamespace {
			problems = append(problems, fmt.Sprintf("nodeGroupUpgrades[%d].vmCluster.namespace %s: a rollout may only target a VMCluster in the operation's namespace %s or in %s",
				i, ns, op.Namespace, opsv1.VMClusterNamespace))
		}
	}
	return strings.Join(problems, "; ")
}

func describeViolations(p []opsv1.VMClusterHelmValuesViolation) string {
	parts := make([]string, 0, len(p))
	for _, v := range p {
		parts = append(parts, v.Path+" "+v.Message)
	}
	return strings.Join(parts, "; ")
}

func rolloutMarker(gen int64, changed bool) string {
	return fmt.Sprintf("vmcluster-generation=%d,changed=%t", gen, changed)
}

func parseRolloutMarker(s string) (int64, bool, bool) {
	var gen int64
	var changed bool
	if _, err := fmt.Sscanf(s, "vmcluster-generation=%d,changed=%t", &gen, &changed); err != nil {
		return 0, false, false
	}
	return gen, changed, true
}

// drain evicts the pods of the old node group, one pass per reconcile.
func (r *Reconciler) drain(ctx context.Context, s *scope, step *opsv1.UpgradeStep) error {
	r.startStep(s.op, step)
	nodes, err := r.groupNodes(ctx, s, step.Target)
	if err != nil {
		return err
	}
	res, err := drain.Drain(ctx, r.Client, r.APIReader, nodes, r.Now())
	if err != nil {
		return err
	}
	if res.Done {
		r.succeedStep(s.op, step, fmt.Sprintf("Drained %d nodes of node group %s", len(nodes), step.Target))
		return nil
	}
	msg := fmt.Sprintf("%d pods left on node group %s (%d terminating)", len(res.Remaining), step.Target, len(res.Terminating))
	if len(res.Blocked) > 0 {
		b := res.Blocked[0]
		since := r.now()
		if prev := s.op.Status.BlockedBy; prev != nil && prev.Reason == opsv1.BlockedByPodDisruptionBudget && prev.Pod != nil &&
			prev.Pod.Namespace == b.Pod.Namespace && prev.Pod.Name == b.Pod.Name && prev.Since != nil {
			since = prev.Since
		}
		s.blocked = &opsv1.BlockedBy{
			StepID: step.ID, Reason: opsv1.BlockedByPodDisruptionBudget, Since: since, Node: b.Node,
			Pod:     &opsv1.NamespacedObjectReference{Namespace: b.Pod.Namespace, Name: b.Pod.Name},
			Message: fmt.Sprintf("Eviction of pod %s/%s on node %s refused: %s", b.Pod.Namespace, b.Pod.Name, b.Node, b.Message),
		}
		if b.PDB != nil {
			s.blocked.PodDisruptionBudget = &opsv1.NamespacedObjectReference{Namespace: b.PDB.Namespace, Name: b.PDB.Name}
			s.blocked.Message = fmt.Sprintf("PodDisruptionBudget %s/%s refuses the eviction of pod %s/%s on node %s: %s", b.PDB.Namespace, b.PDB.Name, b.Pod.Namespace, b.Pod.Name, b.Node, b.Message)
		}
		msg = s.blocked.Message
	}
	if r.timedOut(step, r.Options.DrainTimeout) {
		r.failStep(s.op, step, fmt.Sprintf("Drain timed out after %s: %s", r.Options.DrainTimeout, msg))
		r.fail(s.op, step.Message)
		return nil
	}
	step.Message = "Draining: " + msg
	s.requeue = r.Options.PollInterval
	return nil
}

func (r *Reconciler) timedOut(step *opsv1.UpgradeStep, limit time.Duration) bool {
	return limit > 0 && step.StartTime != nil && r.Now().Sub(step.StartTime.Time) > limit
}
