package restore

import (
	"fmt"
	"strconv"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// step is what one reconcile does to one replica, chosen by next from the
// replica's recorded state only. A step with a side effect (hold, start
// vmrestore, release) is only ever taken for a state already recorded in
// status; its successor state is recorded by the same reconcile's status
// patch, and the next side effect waits for that record. A restarted
// operator therefore repeats at most an idempotent side effect: the hold
// and release are annotations, and vmrestore is started under the
// replica's runID, which the runner starts at most once.
type step string

const (
	// stepNone: nothing to do for this replica now (terminal, or not its
	// turn).
	stepNone step = "None"
	// stepMarkStopping: record Stopping (and the start time); no side
	// effect.
	stepMarkStopping step = "MarkStopping"
	// stepStop: hold the replica; when it has stopped, record Restoring
	// with its runID.
	stepStop step = "Stop"
	// stepRestore: keep the hold, start vmrestore (once, by runID) and
	// observe it; record Starting when it succeeded, Failed when it
	// failed.
	stepRestore step = "Restore"
	// stepStart: release the hold; record Succeeded once vmstorage runs
	// and is Ready.
	stepStart step = "Start"
	// stepSkip: the restore failed before this replica was touched;
	// record it Failed.
	stepSkip step = "Skip"
)

// plan returns the step of every replica (by index): with OneAtATime only
// the first unfinished replica moves; with AllAtOnce all of them. Once a
// replica failed, replicas not yet stopped are skipped; the ones already
// stopped finish their restore.
func plan(rs *opsv1.ClusterRestore) []step {
	reps := rs.Status.Replicas
	out := make([]step, len(reps))
	failed := false
	for _, r := range reps {
		if r.State == opsv1.ReplicaRestoreFailed {
			failed = true
		}
	}
	active := 0
	for i, r := range reps {
		switch r.State {
		case opsv1.ReplicaRestoreSucceeded, opsv1.ReplicaRestoreFailed:
			out[i] = stepNone
			continue
		case opsv1.ReplicaRestorePending, "":
			switch {
			case failed:
				out[i] = stepSkip
			case rs.EffectiveStrategy() == opsv1.RestoreOneAtATime && active > 0:
				out[i] = stepNone
			default:
				out[i] = stepMarkStopping
			}
		case opsv1.ReplicaRestoreStopping:
			out[i] = stepStop
		case opsv1.ReplicaRestoreRestoring:
			out[i] = stepRestore
		case opsv1.ReplicaRestoreStarting:
			out[i] = stepStart
		}
		if out[i] != stepSkip {
			active++
		}
	}
	return out
}

// runID names the vmrestore run of a replica: unique per ClusterRestore
// (its UID) and pod ordinal, at most 63 characters.
func runID(rs *opsv1.ClusterRestore, pod string) string {
	uid := string(rs.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	name := rs.Name
	suffix := "-" + uid + "-" + strconv.Itoa(opsv1.PodOrdinal(pod))
	if max := 63 - len("restore-") - len(suffix); len(name) > max {
		name = name[:max]
	}
	return "restore-" + name + suffix
}

// progress is "<finished>/<total>".
func progress(reps []opsv1.ReplicaRestore) (finished, ok int, s string) {
	for _, r := range reps {
		if r.State.IsTerminal() {
			finished++
		}
		if r.State == opsv1.ReplicaRestoreSucceeded {
			ok++
		}
	}
	return finished, ok, fmt.Sprintf("%d/%d", finished, len(reps))
}
