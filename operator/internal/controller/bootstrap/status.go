package bootstrap

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/internal/skeleton"
)

// componentStatus maps a component's HelmRelease onto its status: Ready
// is the HelmRelease's Ready condition once helm-controller has observed
// the latest generation (Unknown before), the version is the chart
// version of the latest release in the HelmRelease's history, the message
// the Ready condition's while it is not True.
func componentStatus(name, chart string, hr *helmv2.HelmRelease) opsv1.ComponentStatus {
	cs := opsv1.ComponentStatus{Name: name, Chart: chart, Ready: metav1.ConditionUnknown}
	if hr == nil {
		cs.Message = "HelmRelease not created yet"
		return cs
	}
	if latest := hr.Status.History.Latest(); latest != nil {
		cs.Version = latest.ChartVersion
	}
	ready := apimeta.FindStatusCondition(hr.Status.Conditions, meta.ReadyCondition)
	switch {
	case ready == nil:
		cs.Message = "waiting for helm-controller"
	case hr.Status.ObservedGeneration < hr.Generation || ready.ObservedGeneration < hr.Generation:
		cs.Message = "waiting for helm-controller to act on the latest change"
		if ready.Status == metav1.ConditionFalse {
			cs.Message = ready.Message
		}
	default:
		cs.Ready = ready.Status
		if ready.Status == metav1.ConditionTrue {
			t := ready.LastTransitionTime
			cs.ReadyTime = &t
		} else {
			cs.Message = ready.Message
		}
	}
	if len(cs.Message) > skeleton.MaxMessage {
		cs.Message = cs.Message[:skeleton.MaxMessage-3] + "..."
	}
	return cs
}

// summary is the overall Ready condition of a stack: True when every
// component is Ready and nothing is refused.
func summary(components []opsv1.ComponentStatus, refused, conflicts map[string]string) (ready metav1.ConditionStatus, reason, message string) {
	for _, c := range components {
		if msg, ok := conflicts[c.Name]; ok {
			return metav1.ConditionFalse, opsv1.BlockedReason, msg
		}
		if msg, ok := refused[c.Name]; ok {
			return metav1.ConditionFalse, opsv1.RemovalRefusedReason, msg
		}
	}
	var waiting []string
	for _, c := range components {
		if c.Ready != metav1.ConditionTrue && !c.Removed {
			waiting = append(waiting, c.Name)
		}
	}
	if len(waiting) > 0 {
		return metav1.ConditionFalse, opsv1.ComponentsNotReadyReason, "waiting for " + joinNames(waiting)
	}
	return metav1.ConditionTrue, opsv1.SucceededReason, "every component is Ready"
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}
