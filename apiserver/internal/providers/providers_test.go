package providers_test

import (
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/providers"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades/upgradestest"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the generated table of docs/providers/README.md")

var readme = filepath.Join("..", "..", "..", "docs", "providers", "README.md")

// TestReadmeMatchesTable: docs/providers/README.md holds the table's
// rendering between its markers (-update rewrites it).
func TestReadmeMatchesTable(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(readme)
	g.Expect(err).NotTo(HaveOccurred())
	doc := string(raw)
	begin, end := strings.Index(doc, providers.BeginMarker), strings.Index(doc, providers.EndMarker)
	g.Expect(begin).To(BeNumerically(">=", 0), "no begin marker in %s", readme)
	g.Expect(end).To(BeNumerically(">", begin), "no end marker in %s", readme)
	want := doc[:begin+len(providers.BeginMarker)] + providers.Markdown() + doc[end:]
	if *update {
		g.Expect(os.WriteFile(readme, []byte(want), 0o644)).To(Succeed())
		return
	}
	g.Expect(doc).To(Equal(want), "docs/providers/README.md is stale: run go test ./apiserver/internal/providers -update")
}

// TestProvidersAndValidationShareTheTable: GET /providers reports, for
// every provider of the table, the capabilities the REST validation
// enforces: a request with clusterAddons is refused exactly when the row
// says no addons, and resolveConflicts exactly when the row says no
// resolveConflicts.
func TestProvidersAndValidationShareTheTable(t *testing.T) {
	g := NewWithT(t)
	var all []string
	for _, c := range opsv1.Capabilities {
		all = append(all, string(c.Provider))
	}
	e, err := server.New(server.Options{}, &providers.Handler{Configured: func() []string { return all }})
	g.Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(e)
	defer srv.Close()
	resp, err := http.Get(srv.URL + providers.Path)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	var got providers.ListResponse
	g.Expect(json.NewDecoder(resp.Body).Decode(&got)).To(Succeed())
	g.Expect(got.Providers).To(HaveLen(len(opsv1.Capabilities)))

	names := map[opsv1.CloudProvider]string{
		opsv1.CloudProviderEKS: "my-eks-cluster", opsv1.CloudProviderGKE: "my-gke-cluster", opsv1.CloudProviderAKS: "myaks",
		opsv1.CloudProviderACK: "my-ack-cluster", opsv1.CloudProviderMock: "dev-cluster",
	}
	groups := map[opsv1.CloudProvider][2]string{opsv1.CloudProviderAKS: {"ngobs", "ngvm"}}
	for _, p := range got.Providers {
		t.Run(string(p.Provider), func(t *testing.T) {
			g := NewWithT(t)
			gr, ok := groups[p.Provider]
			if !ok {
				gr = [2]string{"observability-ng", "vmstorage"}
			}
			body := func(resolve bool) string {
				return upgradestest.Mutate(func(m map[string]any) {
					m["cloudProvider"], m["k8sClusterName"] = string(p.Provider), names[p.Provider]
					upgradestest.NodeGroup(m, 0)["nodeGroupName"] = gr[0]
					upgradestest.NodeGroup(m, 1)["nodeGroupName"] = gr[1]
					upgradestest.NodeGroup(m, 1)["newNodeGroupName"] = gr[1] + "2"
					addon := map[string]any{"name": "vpc-cni", "version": "v1.18.5-eksbuild.1"}
					if resolve {
						addon["resolveConflicts"] = "PRESERVE"
					}
					m["clusterAddons"] = []any{addon}
				})
			}
			fields := func(b string) []string {
				_, verr := upgrades.Decode([]byte(b))
				if verr == nil {
					return nil
				}
				out := []string{}
				for _, v := range verr.Violations {
					out = append(out, v.Field)
				}
				return out
			}
			if p.Addons {
				g.Expect(fields(body(false))).To(BeEmpty())
			} else {
				g.Expect(fields(body(false))).To(ContainElement("clusterAddons"))
			}
			if p.Addons && p.AddonResolveConflicts {
				g.Expect(fields(body(true))).To(BeEmpty())
			} else if p.Addons {
				g.Expect(fields(body(true))).To(ContainElement("clusterAddons[0].resolveConflicts"))
			}
		})
	}
}

// TestCRDRuleListsTheTable: the CRD's CEL rule for clusterAddons names
// exactly the providers whose row allows addons.
func TestCRDRuleListsTheTable(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "crds", "ops.observability.tidbcloud.com_clusterupgradeoperations.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var with []string
	for _, c := range opsv1.Capabilities {
		if c.Addons {
			with = append(with, "'"+string(c.Provider)+"'")
		}
	}
	// The rule sits in a single-quoted YAML scalar: '' is one quote.
	crd := strings.ReplaceAll(string(raw), "''", "'")
	g.Expect(strings.Contains(crd, "self.cloudProvider in ["+strings.Join(with, ", ")+"]")).To(BeTrue(),
		"the CRD's clusterAddons rule does not list exactly %v", with)
}

// TestOnlyConfiguredProvidersAreListed: the rows of the configured
// providers, in the table's order.
func TestOnlyConfiguredProvidersAreListed(t *testing.T) {
	g := NewWithT(t)
	got := providers.List([]string{"mock", "eks", "unknown"})
	g.Expect(got.Providers).To(HaveLen(2))
	g.Expect(got.Providers[0].Provider).To(Equal(opsv1.CloudProviderEKS))
	g.Expect(got.Providers[1].Provider).To(Equal(opsv1.CloudProviderMock))
	g.Expect(providers.List(nil).Providers).NotTo(BeNil())
}
