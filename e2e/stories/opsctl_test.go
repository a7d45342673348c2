package stories

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/e2e/suite"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// storyOpsctl drives the opsctl binary (built with the stack's binaries)
// against the stack, with the server and token from a config file, as a
// user would: a vmcluster created and waited for until RUNNING; the
// quickstart's blue-green upgrade (control plane, an addon, an in-place
// node group and a blue-green move of the vmcluster's vmstorage) started
// from a YAML file and watched to Succeeded (exit 0); an upgrade the
// simulated cloud refuses (someone else's operation in progress on the
// control plane) makes `watch` exit 1 with the failed step's message; and
// -o json is the API's response. Clusters of its own in the simulated
// cloud keep the story independent of the others.
func storyOpsctl(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := &mock.Provider{Client: st.Env.Client}
	ref := cloud.ClusterRef{Provider: cloud.Mock, Name: "opsctl-cluster", Region: "local"}
	g.Expect(p.Seed(ctx, ref, mock.ClusterState{
		Version: "1.29",
		NodeGroups: map[string]*mock.NodeGroupState{
			"opsctl-general": {Size: 1, InstanceTypes: []string{"m5.xlarge"}},
			"opsctl-store":   {Size: 2, InstanceTypes: []string{"r5.xlarge"}},
		},
		Addons: map[string]*mock.AddonState{
			"vpc-cni": {Version: "v1.18.3-eksbuild.1", AvailableVersions: []string{"v1.18.3-eksbuild.1", "v1.18.5-eksbuild.1"}},
		},
	})).To(Succeed())

	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		g.Expect(os.WriteFile(path, []byte(content), 0o600)).To(Succeed())
		return path
	}
	tokenFile := write("token", st.Token+"\n")
	config := write("config.yaml", "server: "+st.APIURL+"\ntokenFile: "+tokenFile+"\n")
	bin, err := testenv.Binary("opsctl")
	g.Expect(err).NotTo(HaveOccurred())
	opsctl := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "OPSCTL_CONFIG="+config)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("opsctl %s: %v", strings.Join(args, " "), err)
		}
		t.Logf("opsctl %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
		return code, out.String(), errOut.String()
	}
	// sameAsAPI checks that `opsctl ... -o json` parses and is the body of
	// GET path.
	sameAsAPI := func(g Gomega, path string, args ...string) {
		code, out, errOut := opsctl(append(args, "-o", "json")...)
		g.Expect(code).To(Equal(0), errOut)
		var got map[string]any
		g.Expect(json.Unmarshal([]byte(out), &got)).To(Succeed(), out)
		apiCode, want := suite.Call(t, http.MethodGet, path, nil)
		g.Expect(apiCode).To(Equal(http.StatusOK))
		g.Expect(got).To(Equal(want))
	}

	// A vmcluster whose vmstorage runs on node group opsctl-store.
	vmc := write("vmcluster.yaml", `name: opsctl
values:
  vmstorage:
    replicaCount: 2
    nodeSelector:
      `+stack.NodeGroupLabel+`: opsctl-store
`)
	t.Cleanup(func() { opsctl("vmclusters", "delete", "opsctl") })
	code, out, errOut := opsctl("vmclusters", "create", "-f", vmc, "--wait", "--timeout", "5m")
	g.Expect(code).To(Equal(0), errOut)
	g.Expect(out).To(MatchRegexp(`^NAME +STATUS +CHART VERSION +AGE\nopsctl +RUNNING `))
	g.Expect(errOut).To(ContainSubstring("vmcluster opsctl: RUNNING"))
	g.Eventually(func(g Gomega) { stsReady(g, "vmstorage-opsctl", 2) }, 3*time.Minute, time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) { sameAsAPI(g, suite.VMClusters+"/opsctl", "vmclusters", "get", "opsctl") }, time.Minute, time.Second).Should(Succeed())

	code, out, errOut = opsctl("nodegroups", "--k8s-cluster", ref.Name, "--region", ref.Region, "--cloud-provider", "mock")
	g.Expect(code).To(Equal(0), errOut)
	g.Expect(out).To(MatchRegexp(`(?m)^NAME +VERSION +STATUS +DESIRED +MIN +MAX +INSTANCE TYPES$`))
	g.Expect(out).To(MatchRegexp(`(?m)^opsctl-store +1\.29 +ACTIVE +2 `))

	// The quickstart's blue-green upgrade, on this story's cluster.
	upgrade := write("upgrade.yaml", `k8sClusterName: `+ref.Name+`
region: local
cloudProvider: mock
targetVersion: "1.30"
clusterAddons:
- name: vpc-cni
  version: v1.18.5-eksbuild.1
  resolveConflicts: PRESERVE
nodeGroupUpgrades:
- nodeGroupName: opsctl-general
  strategy: in-place
- nodeGroupName: opsctl-store
  strategy: blue-green
  requiresVMStorageRollout: true
  newNodeGroupName: opsctl-store-130
  vmCluster: opsctl
  vmClusterHelmValues:
    vmstorage:
      nodeSelector:
        `+stack.NodeGroupLabel+`: opsctl-store-130
`)
	code, out, errOut = opsctl("upgrades", "dry-run", "-f", upgrade)
	g.Expect(code).To(Equal(0), errOut)
	g.Expect(out).To(MatchRegexp(`(?m)^KIND +NAME +NAMESPACE +CLUSTER +TARGET\nClusterUpgradeOperation +\S+ +observability +opsctl-cluster +1\.30$`))
	code, out, errOut = opsctl("upgrades", "create", "-f", upgrade, "-o", "json")
	g.Expect(code).To(Equal(0), errOut)
	var created map[string]any
	g.Expect(json.Unmarshal([]byte(out), &created)).To(Succeed(), out)
	id, _ := created["id"].(string)
	g.Expect(id).NotTo(BeEmpty(), out)

	code, out, errOut = opsctl("upgrades", "watch", id, "--timeout", "10m")
	g.Expect(code).To(Equal(0), "stdout:\n%s\nstderr:\n%s", out, errOut)
	g.Expect(out).To(ContainSubstring("step nodegroup/opsctl-store/CreateNodeGroup  Succeeded"))
	g.Expect(out).To(MatchRegexp(`upgrade operation \S+ Succeeded\n$`))
	_, done := suite.Call(t, http.MethodGet, suite.Upgrades+"/"+id, nil)
	g.Expect(done["phase"]).To(Equal("Succeeded"))
	for _, s := range done["steps"].([]any) {
		g.Expect(suite.Field(s.(map[string]any), "phase")).To(Equal("Succeeded"), "%v", s)
		// Every step's final state was shown, once.
		g.Expect(strings.Count(out, "step "+suite.Field(s.(map[string]any), "id").(string)+"  Succeeded")).To(Equal(1))
	}
	sameAsAPI(g, suite.Upgrades+"/"+id, "upgrades", "get", id)
	code, out, errOut = opsctl("upgrades", "list", "--k8s-cluster", ref.Name)
	g.Expect(code).To(Equal(0), errOut)
	g.Expect(out).To(MatchRegexp(`(?m)^NAME +CLUSTER +TARGET +PHASE +CURRENT STEP +AGE\n\S+ +opsctl-cluster +1\.30 +Succeeded `))

	// An upgrade the cloud refuses: someone else's control-plane
	// operation is in progress.
	failing := cloud.ClusterRef{Provider: cloud.Mock, Name: "opsctl-refused", Region: "local"}
	now := time.Now().UTC()
	g.Expect(p.Seed(ctx, failing, mock.ClusterState{
		Version: "1.29",
		Operations: map[string]*mock.Operation{"op-elsewhere": {
			ID: "op-elsewhere", Kind: mock.OpStartControlPlaneUpgrade, Target: "cluster/" + failing.Name, Version: "1.30",
			Started: now, Due: now.Add(24 * time.Hour), State: string(cloud.OperationRunning),
		}},
	})).To(Succeed())
	refused := write("refused.json", `{"k8sClusterName":"`+failing.Name+`","region":"local","cloudProvider":"mock","targetVersion":"1.30"}`)
	code, out, errOut = opsctl("upgrades", "create", "-f", refused, "-o", "json")
	g.Expect(code).To(Equal(0), errOut)
	created = nil
	g.Expect(json.Unmarshal([]byte(out), &created)).To(Succeed(), out)
	failedID := created["id"].(string)
	code, out, errOut = opsctl("upgrades", "watch", failedID, "--timeout", "5m")
	g.Expect(code).To(Equal(1), "stdout:\n%s\nstderr:\n%s", out, errOut)
	_, failed := suite.Call(t, http.MethodGet, suite.Upgrades+"/"+failedID, nil)
	g.Expect(failed["phase"]).To(Equal("Failed"))
	var step map[string]any
	for _, s := range failed["steps"].([]any) {
		if s.(map[string]any)["phase"] == "Failed" {
			step = s.(map[string]any)
		}
	}
	g.Expect(step).NotTo(BeNil(), "%v", failed)
	g.Expect(step["message"]).To(ContainSubstring("has an operation in progress"))
	g.Expect(errOut).To(ContainSubstring("Error: upgrade operation " + failed["name"].(string) + " Failed: step " + step["id"].(string) + ": " + step["message"].(string)))
}
