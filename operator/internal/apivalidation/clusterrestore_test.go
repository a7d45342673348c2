package apivalidation

import (
	"testing"

	"github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func restoreSpec() obj {
	return mustJSON(`{"backup": "vmcluster-2026-05-06"}`)
}

func TestClusterRestoreCreate(t *testing.T) {
	cases := []specCase{
		{name: "backup only", mutate: nil},
		{name: "everything", mutate: func(s obj) {
			s["vmCluster"] = obj{"name": "vmcluster-copy"}
			s["strategy"] = "AllAtOnce"
			s["replicaMapping"] = []any{obj{"replica": 0, "fromReplica": 2}, obj{"replica": 1, "fromReplica": 0}}
		}},
		{name: "backup missing", mutate: func(s obj) { delete(s, "backup") },
			reject: rejected("spec.backup", "Required value")},
		{name: "backup not a name", mutate: func(s obj) { s["backup"] = "Backup_1" },
			reject: rejected("spec.backup", "should match")},
		{name: "strategy unknown", mutate: func(s obj) { s["strategy"] = "Parallel" },
			reject: rejected("spec.strategy", `Unsupported value: "Parallel"`)},
		{name: "mapping replica negative", mutate: func(s obj) { s["replicaMapping"] = []any{obj{"replica": -1, "fromReplica": 0}} },
			reject: rejected("spec.replicaMapping[0].replica", "greater than or equal to 0")},
		{name: "mapping fromReplica missing", mutate: func(s obj) { s["replicaMapping"] = []any{obj{"replica": 0}} },
			reject: rejected("spec.replicaMapping[0].fromReplica", "Required value")},
		{name: "mapping names a replica twice", mutate: func(s obj) {
			s["replicaMapping"] = []any{obj{"replica": 0, "fromReplica": 0}, obj{"replica": 0, "fromReplica": 1}}
		}, reject: rejected("spec.replicaMapping[1]", "Duplicate value")},
	}
	runCreateCases(t, v1alpha1.ClusterRestoreKind, restoreSpec, cases)
}

func TestClusterRestoreImmutability(t *testing.T) {
	cases := []updateCase{
		{name: "backup changed", mutate: func(s obj) { s["backup"] = "other" },
			reject: rejected("spec", "spec is immutable; create a new ClusterRestore")},
		{name: "strategy changed", mutate: func(s obj) { s["strategy"] = "AllAtOnce" },
			reject: rejected("spec", "spec is immutable; create a new ClusterRestore")},
	}
	runUpdateCases(t, v1alpha1.ClusterRestoreKind, restoreSpec, cases)
}
