package stories

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/tidbcloud/ops-server/e2e/suite"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

// storyDryRunApply: the dry run's YAML piped to `kubectl apply -f -` is an
// operation like a POSTed one: the REST API finds it under the name the
// dry run showed, with the spec and initiator a POST records, and it
// Succeeds on the simulated cloud (an in-place node-group upgrade).
func storyDryRunApply(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ref := cloud.ClusterRef{Provider: cloud.Mock, Name: "dryrun-cluster", Region: "local"}
	g.Expect((&mock.Provider{Client: st.Env.Client}).Seed(ctx, ref, mock.ClusterState{
		Version:    "1.29",
		NodeGroups: map[string]*mock.NodeGroupState{"dryrun-ng": {Size: 1, InstanceTypes: []string{"m5.large"}}},
	})).To(Succeed())
	req := map[string]any{
		"k8sClusterName": "dryrun-cluster", "region": "local", "cloudProvider": "mock", "targetVersion": "1.30",
		"nodeGroupUpgrades": []any{map[string]any{"nodeGroupName": "dryrun-ng", "strategy": "in-place"}},
	}

	manifest := dryRunYAML(t, req)
	var cr struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name, Namespace, UID, ResourceVersion string
		} `json:"metadata"`
		Spec map[string]any `json:"spec"`
	}
	g.Expect(yaml.Unmarshal(manifest, &cr)).To(Succeed(), string(manifest))
	g.Expect(cr.Kind).To(Equal("ClusterUpgradeOperation"))
	g.Expect(cr.Metadata.Name).To(HavePrefix("upgrade-"), "a concrete name, not a generateName")
	g.Expect(cr.Metadata.Namespace).To(Equal(obs))
	code, _ := suite.Call(t, http.MethodGet, suite.Upgrades+"/"+cr.Metadata.Name, nil)
	g.Expect(code).To(Equal(http.StatusNotFound), "the dry run created nothing")

	out, err := suite.KubectlApply(string(manifest))
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(cr.Metadata.Name + " created"))

	done := suite.WaitUpgrade(t, cr.Metadata.Name, "Succeeded", 2*time.Minute)
	g.Expect(done["steps"]).To(HaveLen(2), "control plane and the in-place node-group upgrade")
	g.Expect(done["initiatedBy"]).NotTo(BeEmpty(), "the initiator a POST records")
	spec, _ := json.Marshal(done["spec"])
	g.Expect(spec).To(MatchJSON(`{"k8sClusterName":"dryrun-cluster","region":"local","cloudProvider":"mock","targetVersion":"1.30",
		"nodeGroupUpgrades":[{"nodeGroupName":"dryrun-ng","strategy":"in-place","requiresVMStorageRollout":false}]}`))
	state, err := (&mock.Provider{Client: st.Env.Client}).State(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(state.Version).To(Equal("1.30"))
	g.Expect(state.NodeGroups["dryrun-ng"].Version).To(Equal("1.30"))

	// The same request POSTed (to the next minor) is an operation of the
	// same shape that Succeeds too.
	req["targetVersion"] = "1.31"
	code, posted := suite.Call(t, http.MethodPost, suite.Upgrades, req)
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", posted)
	viaPost := suite.WaitUpgrade(t, posted["id"].(string), "Succeeded", 2*time.Minute)
	g.Expect(viaPost["steps"]).To(HaveLen(len(done["steps"].([]any))))
	g.Expect(viaPost["initiatedBy"]).To(Equal(done["initiatedBy"]))
}

// dryRunYAML asks ops-apiserver for the dry run of req in YAML.
func dryRunYAML(t *testing.T, req map[string]any) []byte {
	t.Helper()
	g := NewWithT(t)
	b, err := json.Marshal(req)
	g.Expect(err).NotTo(HaveOccurred())
	r, err := http.NewRequest(http.MethodPost, st.APIURL+suite.Upgrades+"/dry-run", bytes.NewReader(b))
	g.Expect(err).NotTo(HaveOccurred())
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/yaml")
	if st.Token != "" {
		r.Header.Set("Authorization", "Bearer "+st.Token)
	}
	resp, err := suite.Client(t).Do(r)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
	g.Expect(resp.Header.Get("Content-Type")).To(HavePrefix("application/yaml"))
	return body
}
