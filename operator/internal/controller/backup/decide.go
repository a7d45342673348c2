package backup

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// actionKind is what one reconcile does next. The reconciler observes the
// VMCluster and its pods, decides one action with decide (pure), performs
// it, patches status and goes round again.
type actionKind string

const (
	// actNone: the backup is terminal; nothing to do.
	actNone actionKind = "None"
	// actFail: the backup cannot start (VMCluster missing, no pods, not
	// operational in time); it ends Failed.
	actFail actionKind = "Fail"
	// actWait: the VMCluster is not operational or rolls out; nothing
	// starts until it is.
	actWait actionKind = "Wait"
	// actPlan: write one status entry per vmstorage pod, before acting.
	actPlan actionKind = "Plan"
	// actLost: replicas whose pod disappeared or was recreated fail.
	actLost actionKind = "Lost"
	// actMarkSnapshot: record every pending replica as Snapshotting (with
	// its start time) before any snapshot call.
	actMarkSnapshot actionKind = "MarkSnapshot"
	// actSnapshot: take (or adopt) the snapshot of every Snapshotting
	// replica without one, all at once.
	actSnapshot actionKind = "Snapshot"
	// actMarkUpload: record replicas with a snapshot as Uploading, with
	// their upload's name, up to the concurrency limit.
	actMarkUpload actionKind = "MarkUpload"
	// actPoll: start (once) or observe the uploads of Uploading replicas.
	actPoll actionKind = "Poll"
	// actFinish: every replica is terminal; set the phase.
	actFinish actionKind = "Finish"
)

// action is the decision: a kind, the replicas (indexes into
// status.replicas) it applies to, and for actFail/actWait why.
type action struct {
	kind     actionKind
	replicas []int
	reason   string
	msg      string
}

// world is what the reconciler observed this round.
type world struct {
	// vmcluster: the VMCluster exists.
	vmcluster bool
	// ready: the VMCluster is operational at its generation and its
	// vmstorage StatefulSet has rolled out; readyMsg says what is pending.
	ready    bool
	readyMsg string
	// pods are the vmstorage StatefulSet's pods by name; empty when the
	// StatefulSet does not exist.
	pods map[string]*corev1.Pod
	// waitFor names an older ClusterBackup of the same VMCluster that has
	// not recorded all its snapshots yet: backups of one VMCluster take
	// their snapshots one after the other, in creation order, so a
	// snapshot adopted after a lost answer is never another backup's.
	waitFor string
	// taken are the snapshot names other backups of the VMCluster record.
	taken map[string]bool
	// rollout names a ClusterUpgradeOperation rolling out the VMCluster's
	// vmstorage: a backup that has not started waits for it.
	rollout string
	// restore names a ClusterRestore that claimed the VMCluster: a backup
	// that has not started waits for it.
	restore string
	// operation names an active VMClusterOperation of the VMCluster: a
	// backup that has not started waits for it too.
	operation string
}

// decide picks the next action from the backup and the observation. It is
// pure. It never picks actSnapshot for a replica that records a snapshot,
// nor actMarkUpload for one that records an upload, and it starts uploads
// only up to the concurrency limit: together with the runners' idempotent
// Start, a replica is snapshotted once and uploaded once.
func decide(b *opsv1.ClusterBackup, w *world, now time.Time, startTimeout time.Duration) action {
	st := &b.Status
	if st.Phase.IsTerminal() {
		return action{kind: actNone}
	}
	ns, name := b.VMClusterKey()
	if !w.vmcluster && !anyStarted(st.Replicas) {
		return action{kind: actFail, reason: opsv1.VMClusterNotFoundReason, msg: fmt.Sprintf("VMCluster %s/%s not found", ns, name)}
	}
	if w.rollout != "" && !anyStarted(st.Replicas) {
		return action{kind: actWait, reason: opsv1.WaitingForOperationReason,
			msg: fmt.Sprintf("Waiting for ClusterUpgradeOperation %s to finish rolling out the vmstorage of VMCluster %s/%s", w.rollout, ns, name)}
	}
	if w.restore != "" && !anyStarted(st.Replicas) {
		return action{kind: actWait, reason: opsv1.WaitingForOperationReason,
			msg: fmt.Sprintf("Waiting for ClusterRestore %s of VMCluster %s/%s to finish", w.restore, ns, name)}
	}
	if w.operation != "" && !anyStarted(st.Replicas) {
		return action{kind: actWait, reason: opsv1.WaitingForOperationReason,
			msg: fmt.Sprintf("Waiting for VMClusterOperation %s of VMCluster %s/%s to finish", w.operation, ns, name)}
	}
	if len(st.Replicas) == 0 {
		if !w.ready {
			return waitOrFail(b, w, now, startTimeout)
		}
		if len(w.pods) == 0 {
			return action{kind: actFail, reason: opsv1.FailedReason, msg: fmt.Sprintf("VMCluster %s/%s has no vmstorage pods (StatefulSet %s)", ns, name, statefulSetName(name))}
		}
		return action{kind: actPlan}
	}
	if lost := lostReplicas(st.Replicas, w); len(lost) > 0 {
		return action{kind: actLost, replicas: lost}
	}
	var pending, unsnapped, snapped, uploading []int
	terminal := 0
	for i := range st.Replicas {
		r := &st.Replicas[i]
		switch {
		case r.State.IsTerminal():
			terminal++
		case r.State == opsv1.ReplicaStatePending || r.State == "":
			pending = append(pending, i)
		case r.State == opsv1.ReplicaStateSnapshotting && r.SnapshotName == "":
			unsnapped = append(unsnapped, i)
		case r.State == opsv1.ReplicaStateSnapshotting:
			snapped = append(snapped, i)
		case r.State == opsv1.ReplicaStateUploading:
			uploading = append(uploading, i)
		}
	}
	if len(pending) > 0 {
		switch {
		case w.ready && w.waitFor != "" && !anyStarted(st.Replicas):
			return waitOrFail(b, &world{readyMsg: "ClusterBackup " + w.waitFor + " is taking its snapshots"}, now, startTimeout)
		case w.ready:
			return action{kind: actMarkSnapshot, replicas: pending}
		case !anyStarted(st.Replicas):
			return waitOrFail(b, w, now, startTimeout)
		}
		// Pending beside started replicas (not a state the reconciler
		// makes): the started ones go on, the pending wait below.
	}
	if len(unsnapped) > 0 {
		return action{kind: actSnapshot, replicas: unsnapped}
	}
	if free := concurrency(b) - len(uploading); free > 0 && len(snapped) > 0 {
		return action{kind: actMarkUpload, replicas: snapped[:min(free, len(snapped))]}
	}
	if len(uploading) > 0 {
		return action{kind: actPoll, replicas: uploading}
	}
	if terminal == len(st.Replicas) {
		return action{kind: actFinish}
	}
	if len(pending) > 0 {
		return action{kind: actWait, reason: opsv1.BlockedReason, msg: "Waiting: " + w.readyMsg}
	}
	// Snapshotted replicas wait for a slot that only a poll frees; with
	// nothing uploading that cannot happen, so this is unreachable.
	return action{kind: actNone}
}

// waitOrFail waits for the VMCluster to become operational, for at most
// startTimeout after the backup was created.
func waitOrFail(b *opsv1.ClusterBackup, w *world, now time.Time, startTimeout time.Duration) action {
	msg := w.readyMsg
	if msg == "" {
		msg = "VMCluster is not operational"
	}
	if startTimeout > 0 && now.Sub(b.CreationTimestamp.Time) > startTimeout {
		return action{kind: actFail, reason: opsv1.FailedReason, msg: fmt.Sprintf("Not started within %s: %s", startTimeout, msg)}
	}
	return action{kind: actWait, reason: opsv1.BlockedReason, msg: "Waiting: " + msg}
}

// lostReplicas are the unfinished replicas whose pod no longer exists, or
// was recreated (another UID) after its backup started. A pending
// replica's pod may change: it is refreshed when the replica starts.
func lostReplicas(replicas []opsv1.ReplicaBackup, w *world) []int {
	var lost []int
	for i := range replicas {
		r := &replicas[i]
		if r.State.IsTerminal() {
			continue
		}
		pod := w.pods[r.Pod]
		if pod == nil || (r.State != opsv1.ReplicaStatePending && r.State != "" && string(pod.UID) != r.PodUID) {
			lost = append(lost, i)
		}
	}
	return lost
}

func anyStarted(replicas []opsv1.ReplicaBackup) bool {
	for i := range replicas {
		if s := replicas[i].State; s != opsv1.ReplicaStatePending && s != "" {
			return true
		}
	}
	return false
}

// concurrency is spec.concurrency, or every replica at once.
func concurrency(b *opsv1.ClusterBackup) int {
	if b.Spec.Concurrency != nil && *b.Spec.Concurrency > 0 {
		return int(*b.Spec.Concurrency)
	}
	return len(b.Status.Replicas)
}

// statefulSetName is the vmstorage StatefulSet the VictoriaMetrics
// operator creates for a VMCluster.
func statefulSetName(vmcluster string) string { return "vmstorage-" + vmcluster }
