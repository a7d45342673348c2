package vmclusters

import (
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
)

// TrimRelease drops from a cached HelmRelease the status ops-apiserver
// never reads, in place (the informer transform of HelmReleases,
// app.New). What stays is what a reader of the cache looks at —
// vmclusters and components alike (StatusOf, deployedVersion, lastAction,
// View, SameAsRequest, UpdatePatch, HoldsForRestore, ETagOf, IsManaged):
// the whole metadata and spec, status.conditions, and of status.history
// each snapshot's status and chartVersion, with
// lastAttemptedReleaseAction and lastAttemptedGeneration. Everything
// else of the status goes, above all status.inventory (one entry per
// object of the release) and the snapshots' digests, timestamps and test
// hooks. A reader that needs more reads the object from the API server
// (troubleshoot does).
func TrimRelease(hr *helmv2.HelmRelease) {
	st := &hr.Status
	kept := helmv2.HelmReleaseStatus{
		Conditions:                 st.Conditions,
		LastAttemptedReleaseAction: st.LastAttemptedReleaseAction,
		LastAttemptedGeneration:    st.LastAttemptedGeneration,
	}
	if len(st.History) > 0 {
		kept.History = make(helmv2.Snapshots, len(st.History))
		for i, s := range st.History {
			if s != nil {
				kept.History[i] = &helmv2.Snapshot{Status: s.Status, ChartVersion: s.ChartVersion}
			}
		}
	}
	hr.Status = kept
}
