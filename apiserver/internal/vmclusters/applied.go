package vmclusters

import (
	"encoding/json"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
)

// deployedVersion is the chart version of the newest release Helm
// deployed ("" when none was): status.history is newest first.
func deployedVersion(hr *helmv2.HelmRelease) string {
	for _, s := range hr.Status.History {
		if s != nil && s.Status == "deployed" {
			return s.ChartVersion
		}
	}
	return ""
}

// lastAction is the last Helm action helm-controller attempted, with its
// result (the Released condition) and when it ended.
func lastAction(hr *helmv2.HelmRelease) *HelmAction {
	if hr.Status.LastAttemptedReleaseAction == "" {
		return nil
	}
	a := &HelmAction{Action: string(hr.Status.LastAttemptedReleaseAction), Result: "InProgress"}
	if c := apimeta.FindStatusCondition(hr.Status.Conditions, helmv2.ReleasedCondition); c != nil && c.ObservedGeneration >= hr.Status.LastAttemptedGeneration {
		a.Result, a.Reason, a.Message = "Failed", c.Reason, c.Message
		if c.Status == "True" {
			a.Result = "Succeeded"
		}
		a.Time = c.LastTransitionTime.UTC().Format("2006-01-02T15:04:05Z")
	} else if c := apimeta.FindStatusCondition(hr.Status.Conditions, meta.ReadyCondition); c != nil {
		a.Reason, a.Message = c.Reason, c.Message
	}
	return a
}

// appliedValues are the chart's default values (of the version deployed,
// else of the version requested) coalesced with the overrides as Helm
// does. Without the chart's defaults (a remote chart) they are the
// overrides.
func (t Translator) appliedValues(overrides []byte, version string) json.RawMessage {
	defaults, ok := t.Chart.Defaults[version]
	if !ok || defaults == nil {
		return overrides
	}
	var dst, src map[string]any
	if json.Unmarshal(overrides, &dst) != nil {
		return overrides
	}
	raw, err := json.Marshal(defaults)
	if err != nil || json.Unmarshal(raw, &src) != nil {
		return overrides
	}
	if dst == nil {
		dst = map[string]any{}
	}
	out, err := json.Marshal(chartutil.CoalesceTables(dst, src))
	if err != nil {
		return overrides
	}
	return out
}
