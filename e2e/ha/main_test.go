// Package ha is the e2e suite of the local stack in HA mode (Options.Replicas
// 2, as `OPS_REPLICAS=2 make dev` runs it): two ops-apiservers, two Flux
// pairs and two ops-operators, the controllers leader-elected. Its tests
// SIGKILL one process of a pair — the leader, for the controllers — in
// the middle of an operation and check that the other carries on: the
// operation completes, no cloud call is repeated, and the time a standby
// took to take the Lease over is logged (t.Logf; see docs/ha-local.md).
package ha

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/e2e/suite"
)

var st *stack.Stack

func TestMain(m *testing.M) {
	os.Exit(suite.Run(m, "ops-ha-", &st, dump, func(o *stack.Options) {
		o.Replicas = 2
		// Simulated cloud operations long enough for a step to outlast a
		// failover and the restart of the killed replica.
		o.OperatorArgs = []string{"--mock-operation-duration=8s"}
	}))
}

func dump() {
	suite.PrintKubectl(
		[]string{"get", "leases", "-n", stack.Namespace, "-o", "wide"},
		[]string{"get", "clusterupgradeoperations,clusterbackups,helmreleases,helmcharts,helmrepositories,vmclusters", "-A", "-o", "wide"},
		[]string{"get", "helmreleases,helmcharts", "-A", "-o", "yaml"},
		[]string{"get", "pods", "-A", "-o", "wide"},
		[]string{"get", "clusterupgradeoperations", "-A", "-o", "yaml"},
		[]string{"get", "clusterbackups", "-A", "-o", "yaml"},
	)
	b, _ := json.MarshalIndent(st.ProcessList(), "", "  ")
	fmt.Fprintf(os.Stderr, "----- %s\n%s\n", stack.ProcessesFile, b)
	st.WriteLogs(os.Stderr, 6000)
}
