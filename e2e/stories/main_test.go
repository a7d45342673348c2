// Package stories is the e2e suite: it starts the same local stack as
// `make dev` (control plane, kcm, scheduler, kwok, Flux, the simulated
// cloud, ops-operator and ops-apiserver, then the VictoriaMetrics operator
// bootstrapped by an ObservabilityStack) and runs the user stories only through the REST API and
// kubectl.
package stories

import (
	"os"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/e2e/suite"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var st *stack.Stack

func TestMain(m *testing.M) {
	// The suite runs the binaries a user runs: RunSuite builds them fresh
	// into bin/.
	os.Exit(suite.Run(m, "ops-e2e-", &st, dump))
}

// dump prints what a failure needs to be explained: the ops objects,
// VMClusters, workloads, nodes, Events and the component logs.
func dump() {
	suite.PrintKubectl(
		[]string{"get", "clusterupgradeoperations,clusterbackups,helmreleases,helmrepositories,vmclusters,observabilitystacks,vmagents", "-A", "-o", "wide"},
		[]string{"get", "statefulsets,deployments,pods", "-A", "-o", "wide"},
		[]string{"get", "nodes", "-L", stack.NodeGroupLabel},
		[]string{"get", "events", "-A", "--sort-by=.lastTimestamp"},
		[]string{"get", "clusterupgradeoperations", "-A", "-o", "yaml"},
		[]string{"get", "clusterbackups", "-A", "-o", "yaml"},
	)
	st.WriteLogs(os.Stderr, 6000)
}

func repoRoot(t *testing.T) string {
	root, err := testenv.RepoRoot()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return root
}
