package vmclusters

import (
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Status is the lifecycle status of a vmcluster.
type Status string

// The statuses, in the order a vmcluster usually goes through them.
const (
	StatusCreating Status = "CREATING"
	StatusRunning  Status = "RUNNING"
	StatusUpdating Status = "UPDATING"
	StatusFailed   Status = "FAILED"
	StatusDeleting Status = "DELETING"
)

// Statuses lists every status (for validation of the list filter).
var Statuses = []Status{StatusCreating, StatusRunning, StatusUpdating, StatusFailed, StatusDeleting}

// StatusSummary is a status with the Flux reason and message it came from.
type StatusSummary struct {
	Status  Status
	Reason  string
	Message string
	// Installed reports whether a release of the chart has been deployed
	// at least once (its objects exist): endpoints are shown then.
	Installed bool
}

// waitingReasons are the Ready=False reasons of helm-controller that mean
// "waiting for something to become ready", not "failed".
var waitingReasons = map[string]bool{
	meta.ProgressingReason:          true,
	meta.ProgressingWithRetryReason: true,
	meta.DependencyNotReadyReason:   true,
	"SourceNotReady":                true,
	meta.HealthCheckCanceledReason:  true,
}

// StatusOf derives the status of a vmcluster from its HelmRelease. It is
// the only place that does, and it is pure. With g = metadata.generation
// and "current" meaning a condition's observedGeneration == g, the rules,
// first match wins:
//
//	metadata.deletionTimestamp set                        DELETING
//	Stalled=True, current                                 FAILED   (Released's reason/message if current and False, else Stalled's)
//	Released=False, current                               FAILED   (Released's reason/message)
//	Ready=False, current, reason not a waiting reason     FAILED   (Ready's reason/message)
//	Ready=True, current, a release ever deployed          RUNNING
//	anything else (no status yet, Ready Unknown, Ready
//	  stale, Ready=False waiting for the source, Ready=True
//	  before the history shows a deployed release)        CREATING if no release was ever deployed,
//	                                                      UPDATING otherwise
//
// "Ever deployed" means status.history has a snapshot whose Helm status is
// deployed or superseded. helm-controller marks Ready Unknown while it runs
// an action, sets Released=False with Helm's error when an install or an
// upgrade fails (keeping it while it retries), and Stalled=True once its
// retries are exhausted; a spec change makes every condition stale until
// helm-controller looks at the new generation, so a vmcluster just changed
// through the API reads UPDATING (or CREATING) at once.
func StatusOf(hr *helmv2.HelmRelease) StatusSummary {
	installed := everDeployed(hr)
	inProgress := StatusCreating
	if installed {
		inProgress = StatusUpdating
	}
	conds := hr.Status.Conditions
	ready := apimeta.FindStatusCondition(conds, meta.ReadyCondition)
	released := apimeta.FindStatusCondition(conds, helmv2.ReleasedCondition)
	stalled := apimeta.FindStatusCondition(conds, meta.StalledCondition)
	current := func(c *metav1.Condition) bool { return c != nil && c.ObservedGeneration == hr.Generation }
	summary := func(s Status, c *metav1.Condition) StatusSummary {
		out := StatusSummary{Status: s, Installed: installed}
		if c != nil {
			out.Reason, out.Message = c.Reason, c.Message
		}
		return out
	}

	switch {
	case hr.DeletionTimestamp != nil:
		out := summary(StatusDeleting, nil)
		out.Reason, out.Message = "Deleting", "the Helm release is being uninstalled"
		return out
	case current(stalled) && stalled.Status == metav1.ConditionTrue:
		if current(released) && released.Status == metav1.ConditionFalse {
			out := summary(StatusFailed, released)
			out.Message = released.Message + " (" + stalled.Message + ")"
			return out
		}
		return summary(StatusFailed, stalled)
	case current(released) && released.Status == metav1.ConditionFalse:
		return summary(StatusFailed, released)
	case current(ready) && ready.Status == metav1.ConditionFalse && !waitingReasons[ready.Reason]:
		return summary(StatusFailed, ready)
	case current(ready) && ready.Status == metav1.ConditionTrue && installed:
		// Ready without a deployed release in the history is a status
		// helm-controller wrote ahead of the history: not running yet.
		return summary(StatusRunning, ready)
	default:
		return summary(inProgress, ready)
	}
}

// everDeployed reports whether a release of the chart was deployed.
func everDeployed(hr *helmv2.HelmRelease) bool {
	for _, s := range hr.Status.History {
		if s == nil {
			continue
		}
		if s.Status == "deployed" || s.Status == "superseded" {
			return true
		}
	}
	return false
}
