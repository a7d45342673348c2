package vmclusters

import (
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cond(typ string, status metav1.ConditionStatus, reason, msg string, gen int64) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen}
}

func release(gen int64, history []string, conds ...metav1.Condition) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "ns", Generation: gen}}
	for i, s := range history {
		hr.Status.History = append(hr.Status.History, &helmv2.Snapshot{Version: len(history) - i, Status: s})
	}
	hr.Status.Conditions = conds
	return hr
}

func TestStatusOf(t *testing.T) {
	const (
		T = metav1.ConditionTrue
		F = metav1.ConditionFalse
		U = metav1.ConditionUnknown
	)
	deployed := []string{"deployed"}
	now := metav1.Now()

	tests := []struct {
		name        string
		hr          *helmv2.HelmRelease
		want        Status
		wantReason  string
		wantMessage string
		installed   bool
	}{
		{name: "just created, no status", hr: release(1, nil), want: StatusCreating},
		{
			name: "install running",
			hr:   release(1, nil, cond(meta.ReadyCondition, U, meta.ProgressingReason, "Running 'install' action", 1)),
			want: StatusCreating, wantReason: meta.ProgressingReason, wantMessage: "Running 'install' action",
		},
		{
			name: "waiting for the chart source",
			hr:   release(1, nil, cond(meta.ReadyCondition, F, "SourceNotReady", "HelmChart 'ns/ns-c1' is not ready", 1)),
			want: StatusCreating, wantReason: "SourceNotReady", wantMessage: "HelmChart 'ns/ns-c1' is not ready",
		},
		{
			name: "waiting for a dependency",
			hr:   release(1, nil, cond(meta.ReadyCondition, F, meta.DependencyNotReadyReason, "dep", 1)),
			want: StatusCreating, wantReason: meta.DependencyNotReadyReason,
		},
		{
			name: "installed and ready",
			hr: release(1, deployed,
				cond(meta.ReadyCondition, T, helmv2.InstallSucceededReason, "Helm install succeeded", 1),
				cond(helmv2.ReleasedCondition, T, helmv2.InstallSucceededReason, "Helm install succeeded", 1)),
			want: StatusRunning, wantReason: helmv2.InstallSucceededReason, installed: true,
		},
		{
			name: "ready before the history shows a deployed release",
			hr: release(1, nil,
				cond(meta.ReadyCondition, T, helmv2.InstallSucceededReason, "Helm install succeeded", 1)),
			want: StatusCreating, wantReason: helmv2.InstallSucceededReason,
		},
		{
			name: "periodic reconcile of a ready release stays running",
			hr: release(3, []string{"deployed", "superseded"},
				cond(meta.ReadyCondition, T, helmv2.UpgradeSucceededReason, "ok", 3),
				cond(meta.ReconcilingCondition, T, meta.ProgressingReason, "Fulfilling prerequisites", 3)),
			want: StatusRunning, installed: true,
		},
		{
			name: "spec changed, not yet seen by Flux",
			hr:   release(2, deployed, cond(meta.ReadyCondition, T, helmv2.InstallSucceededReason, "ok", 1)),
			want: StatusUpdating, installed: true,
		},
		{
			name: "upgrade running",
			hr: release(2, deployed,
				cond(meta.ReadyCondition, U, meta.ProgressingReason, "Running 'upgrade' action", 2),
				cond(helmv2.ReleasedCondition, T, helmv2.InstallSucceededReason, "ok", 1)),
			want: StatusUpdating, wantMessage: "Running 'upgrade' action", installed: true,
		},
		{
			name: "spec changed before the first install finished",
			hr:   release(2, nil, cond(meta.ReadyCondition, U, meta.ProgressingReason, "Running 'install' action", 1)),
			want: StatusCreating,
		},
		{
			name: "install failed",
			hr: release(1, nil,
				cond(meta.ReadyCondition, F, helmv2.InstallFailedReason, "Helm install failed: boom", 1),
				cond(helmv2.ReleasedCondition, F, helmv2.InstallFailedReason, "Helm install failed: boom", 1)),
			want: StatusFailed, wantReason: helmv2.InstallFailedReason, wantMessage: "Helm install failed: boom",
		},
		{
			name: "install failed, Flux retrying (Ready unknown while it runs the action again)",
			hr: release(1, nil,
				cond(meta.ReadyCondition, U, meta.ProgressingReason, "Running 'install' action", 1),
				cond(helmv2.ReleasedCondition, F, helmv2.InstallFailedReason, "Helm install failed: boom", 1)),
			want: StatusFailed, wantReason: helmv2.InstallFailedReason, wantMessage: "Helm install failed: boom",
		},
		{
			name: "failed install, fixed by a new spec",
			hr: release(2, nil,
				cond(meta.ReadyCondition, F, helmv2.InstallFailedReason, "boom", 1),
				cond(helmv2.ReleasedCondition, F, helmv2.InstallFailedReason, "boom", 1)),
			want: StatusCreating, wantReason: helmv2.InstallFailedReason,
		},
		{
			name: "upgrade failed and rolled back",
			hr: release(2, []string{"deployed", "failed", "superseded"},
				cond(meta.ReadyCondition, F, helmv2.RollbackSucceededReason, "Helm rollback to previous release succeeded", 2),
				cond(helmv2.RemediatedCondition, T, helmv2.RollbackSucceededReason, "Helm rollback succeeded", 2),
				cond(helmv2.ReleasedCondition, F, helmv2.UpgradeFailedReason, "Helm upgrade failed: bad", 2)),
			want: StatusFailed, wantReason: helmv2.UpgradeFailedReason, wantMessage: "Helm upgrade failed: bad", installed: true,
		},
		{
			name: "retries exhausted",
			hr: release(2, []string{"failed", "deployed"},
				cond(meta.StalledCondition, T, "RetriesExceeded", "Failed to upgrade after 4 attempt(s)", 2),
				cond(meta.ReadyCondition, F, helmv2.UpgradeFailedReason, "Helm upgrade failed: bad", 2),
				cond(helmv2.ReleasedCondition, F, helmv2.UpgradeFailedReason, "Helm upgrade failed: bad", 2)),
			want: StatusFailed, wantReason: helmv2.UpgradeFailedReason,
			wantMessage: "Helm upgrade failed: bad (Failed to upgrade after 4 attempt(s))", installed: true,
		},
		{
			name: "stalled on a configuration error",
			hr:   release(1, nil, cond(meta.StalledCondition, T, meta.InvalidCELExpressionReason, "bad CEL", 1)),
			want: StatusFailed, wantReason: meta.InvalidCELExpressionReason, wantMessage: "bad CEL",
		},
		{
			name: "stalled for an older spec",
			hr:   release(3, deployed, cond(meta.StalledCondition, T, "RetriesExceeded", "old", 2)),
			want: StatusUpdating, installed: true,
		},
		{
			name: "artifact could not be loaded",
			hr:   release(1, nil, cond(meta.ReadyCondition, F, helmv2.ArtifactFailedReason, "Could not load chart", 1)),
			want: StatusFailed, wantReason: helmv2.ArtifactFailedReason,
		},
		{
			name: "a failed first release is not installed",
			hr:   release(1, []string{"failed"}, cond(meta.ReadyCondition, U, meta.ProgressingReason, "again", 1)),
			want: StatusCreating,
		},
		{
			name: "being deleted wins over everything",
			hr: func() *helmv2.HelmRelease {
				hr := release(1, deployed, cond(meta.ReadyCondition, T, helmv2.InstallSucceededReason, "ok", 1))
				hr.DeletionTimestamp = &now
				return hr
			}(),
			want: StatusDeleting, wantReason: "Deleting", installed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := StatusOf(tt.hr)
			g.Expect(got.Status).To(Equal(tt.want))
			g.Expect(got.Installed).To(Equal(tt.installed))
			if tt.wantReason != "" {
				g.Expect(got.Reason).To(Equal(tt.wantReason))
			}
			if tt.wantMessage != "" {
				g.Expect(got.Message).To(Equal(tt.wantMessage))
			}
		})
	}
}
