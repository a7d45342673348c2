package vmclusters

import (
	"context"
	"fmt"
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Work in progress that a DELETE must not break (docs/vmclusters.md,
// "Deleting a vmcluster"): a ClusterBackup of the vmcluster's VMCluster
// that is not finished, and a ClusterUpgradeOperation that is not finished
// whose vmstorage rollout patches that VMCluster, and a VMClusterOperation
// of it that is not finished. Uninstalling the release
// under them would leave a backup of a half-removed cluster and an upgrade
// patching a VMCluster that is gone.

// ReasonInUse is the reason of a DELETE refused because of a Blocker.
const ReasonInUse = "VMCLUSTER_IN_USE"

// Blocker is one piece of work in progress on a VMCluster.
type Blocker struct {
	// Kind is ClusterBackup, ClusterRestore or ClusterUpgradeOperation.
	Kind      string
	Namespace string
	Name      string
	// Phase is the object's phase ("" before its controller saw it).
	Phase string
}

func (b Blocker) String() string {
	phase := b.Phase
	if phase == "" {
		phase = "not started"
	}
	return fmt.Sprintf("%s %s/%s (%s)", b.Kind, b.Namespace, b.Name, phase)
}

// Work finds the work in progress on the VMCluster namespace/name.
type Work interface {
	Blockers(ctx context.Context, namespace, name string) ([]Blocker, error)
}

// KubeWork is Work on the informer cache.
type KubeWork struct {
	Reader client.Reader
	// BackupNamespaces and UpgradeNamespaces are where ClusterBackups and
	// ClusterUpgradeOperations are looked for: namespaces the cache
	// serves (the vmcluster namespace, backups.namespace,
	// upgrades.namespace).
	BackupNamespaces  []string
	UpgradeNamespaces []string
	// OperationNamespaces are where VMClusterOperations are looked for
	// (the vmcluster namespace, where the operations API creates them).
	OperationNamespaces []string
}

// OperationBlockersOf returns the non-terminal VMClusterOperations, among
// those given, of the VMCluster namespace/name.
func OperationBlockersOf(namespace, name string, ops []opsv1.VMClusterOperation) []Blocker {
	var out []Blocker
	for i := range ops {
		o := &ops[i]
		if o.Status.Phase.IsTerminal() {
			continue
		}
		if ns, n := o.VMClusterKey(); ns == namespace && n == name {
			out = append(out, Blocker{Kind: opsv1.VMClusterOperationKind, Namespace: o.Namespace, Name: o.Name, Phase: string(o.Status.Phase)})
		}
	}
	sortBlockers(out)
	return out
}

// BlockersOf returns the non-terminal backups and upgrades, among those
// given, that work on the VMCluster namespace/name, sorted.
func BlockersOf(namespace, name string, backups []opsv1.ClusterBackup, ops []opsv1.ClusterUpgradeOperation) []Blocker {
	var out []Blocker
	for i := range backups {
		b := &backups[i]
		if b.Status.Phase.IsTerminal() {
			continue
		}
		if ns, n := b.VMClusterKey(); ns == namespace && n == name {
			out = append(out, Blocker{Kind: opsv1.ClusterBackupKind, Namespace: b.Namespace, Name: b.Name, Phase: string(b.Status.Phase)})
		}
	}
	for i := range ops {
		op := &ops[i]
		if op.Status.Phase.IsTerminal() {
			continue
		}
		// The rollout target of every node group (its vmCluster,
		// observability/vmcluster when omitted): the one rule
		// ops-operator's backups wait by too.
		if op.Spec.RollsOut(namespace, name) {
			out = append(out, Blocker{Kind: opsv1.ClusterUpgradeOperationKind, Namespace: op.Namespace, Name: op.Name, Phase: string(op.Status.Phase)})
		}
	}
	sortBlockers(out)
	return out
}

// RestoreBlockersOf returns the unfinished restores, among those given,
// that restore into the VMCluster namespace/name (spec.vmCluster, or the
// VMCluster of their backup among backups when omitted).
func RestoreBlockersOf(namespace, name string, restores []opsv1.ClusterRestore, backups []opsv1.ClusterBackup) []Blocker {
	var out []Blocker
	for i := range restores {
		rs := &restores[i]
		if rs.Status.Phase.IsTerminal() {
			continue
		}
		var backup *opsv1.ClusterBackup
		for j := range backups {
			if backups[j].Namespace == rs.Namespace && backups[j].Name == rs.Spec.Backup {
				backup = &backups[j]
			}
		}
		if ns, n := rs.VMClusterKey(backup); ns == namespace && n == name {
			out = append(out, Blocker{Kind: opsv1.ClusterRestoreKind, Namespace: rs.Namespace, Name: rs.Name, Phase: string(rs.Status.Phase)})
		}
	}
	return out
}

func sortBlockers(out []Blocker) {
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
}

// Blockers implements Work.
func (w *KubeWork) Blockers(ctx context.Context, namespace, name string) ([]Blocker, error) {
	var backups []opsv1.ClusterBackup
	for _, ns := range unique(w.BackupNamespaces) {
		var list opsv1.ClusterBackupList
		if err := w.Reader.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("listing ClusterBackups in %s: %w", ns, err)
		}
		backups = append(backups, list.Items...)
	}
	var ops []opsv1.ClusterUpgradeOperation
	for _, ns := range unique(w.UpgradeNamespaces) {
		var list opsv1.ClusterUpgradeOperationList
		if err := w.Reader.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("listing ClusterUpgradeOperations in %s: %w", ns, err)
		}
		ops = append(ops, list.Items...)
	}
	var vmops []opsv1.VMClusterOperation
	for _, ns := range unique(w.OperationNamespaces) {
		var list opsv1.VMClusterOperationList
		if err := w.Reader.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("listing VMClusterOperations in %s: %w", ns, err)
		}
		vmops = append(vmops, list.Items...)
	}
	var restores []opsv1.ClusterRestore
	for _, ns := range unique(w.BackupNamespaces) {
		var list opsv1.ClusterRestoreList
		if err := w.Reader.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("listing ClusterRestores in %s: %w", ns, err)
		}
		restores = append(restores, list.Items...)
	}
	out := append(BlockersOf(namespace, name, backups, ops), RestoreBlockersOf(namespace, name, restores, backups)...)
	out = append(out, OperationBlockersOf(namespace, name, vmops)...)
	sortBlockers(out)
	return out, nil
}

func unique(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
