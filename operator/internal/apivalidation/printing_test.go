/*
Copyright 2026 The ops-server Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package apivalidation

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// getTable lists a resource of our group in a namespace as a server-side
// printed table, as kubectl get does.
func getTable(g Gomega, namespace, resource string) *metav1.Table {
	httpClient, err := rest.HTTPClientFor(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	u, err := url.JoinPath(env.Config.Host, "apis", v1alpha1.GroupName, v1alpha1.Version, "namespaces", namespace, resource)
	g.Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequest(http.MethodGet, u, nil)
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := httpClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "GET %s: %s", u, body)
	table := &metav1.Table{}
	g.Expect(json.Unmarshal(body, table)).To(Succeed())
	return table
}

// columns maps the column names of the table's only row to its cells.
func columns(g Gomega, table *metav1.Table) map[string]any {
	g.Expect(table.Rows).To(HaveLen(1))
	out := map[string]any{}
	for i, c := range table.ColumnDefinitions {
		out[c.Name] = table.Rows[0].Cells[i]
	}
	return out
}

func TestPrinterColumns(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	ns := env.NewNamespace(t)
	cuo := typedUpgrade(ns, "printed")
	g.Expect(env.Client.Create(ctx, cuo)).To(Succeed())
	cuo.Status.Phase = v1alpha1.UpgradePhaseRunning
	cuo.Status.CurrentStep = v1alpha1.ControlPlaneStepID
	cuo.Status.Conditions = []metav1.Condition{condition(v1alpha1.ReadyCondition, metav1.ConditionFalse, v1alpha1.ProgressingReason, "Upgrading the control plane to 1.30")}
	g.Expect(env.Client.Status().Update(ctx, cuo)).To(Succeed())

	cols := columns(g, getTable(g, ns, "clusterupgradeoperations"))
	g.Expect(cols).To(HaveKeyWithValue("Name", "printed"))
	g.Expect(cols).To(HaveKeyWithValue("Cluster", "my-eks-cluster"))
	g.Expect(cols).To(HaveKeyWithValue("Provider", "eks"))
	g.Expect(cols).To(HaveKeyWithValue("Version", "1.30"))
	g.Expect(cols).To(HaveKeyWithValue("Phase", "Running"))
	g.Expect(cols).To(HaveKeyWithValue("Step", "controlplane"))
	g.Expect(cols).To(HaveKeyWithValue("Ready", "False"))
	g.Expect(cols).To(HaveKeyWithValue("Status", "Upgrading the control plane to 1.30"))
	g.Expect(cols).To(HaveKey("Age"))

	b := &v1alpha1.ClusterBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "printed"},
		Spec: v1alpha1.ClusterBackupSpec{
			VMCluster:   v1alpha1.VMClusterReference{Name: "vmcluster"},
			Destination: v1alpha1.BackupDestination{URL: "gs://bucket/vm"},
		},
	}
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())
	b.Status.Phase = v1alpha1.BackupPhaseSucceeded
	b.Status.Progress = "3/3"
	b.Status.Conditions = []metav1.Condition{condition(v1alpha1.ReadyCondition, metav1.ConditionTrue, v1alpha1.SucceededReason, "Backed up 3 of 3 replicas")}
	g.Expect(env.Client.Status().Update(ctx, b)).To(Succeed())

	cols = columns(g, getTable(g, ns, "clusterbackups"))
	g.Expect(cols).To(HaveKeyWithValue("VMCluster", "vmcluster"))
	g.Expect(cols).To(HaveKeyWithValue("Destination", "gs://bucket/vm"))
	g.Expect(cols).To(HaveKeyWithValue("Phase", "Succeeded"))
	g.Expect(cols).To(HaveKeyWithValue("Progress", "3/3"))
	g.Expect(cols).To(HaveKeyWithValue("Ready", "True"))
	g.Expect(cols).To(HaveKeyWithValue("Status", "Backed up 3 of 3 replicas"))
}

// openAPISchema is the part of an OpenAPI v3 schema these tests read.
type openAPISchema struct {
	Description string                   `json:"description"`
	Type        string                   `json:"type"`
	Required    []string                 `json:"required"`
	Enum        []any                    `json:"enum"`
	Properties  map[string]openAPISchema `json:"properties"`
	Items       *openAPISchema           `json:"items"`
	ListType    string                   `json:"x-kubernetes-list-type"`
	ListMapKeys []string                 `json:"x-kubernetes-list-map-keys"`
}

// TestOpenAPIExplain checks what `kubectl explain
// clusterupgradeoperation.spec.nodeGroupUpgrades` prints: kubectl explain
// reads the API server's OpenAPI v3 document for the group, so every
// documented field must be there with its description.
func TestOpenAPIExplain(t *testing.T) {
	g := NewWithT(t)
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())

	var doc struct {
		Components struct {
			Schemas map[string]openAPISchema `json:"schemas"`
		} `json:"components"`
	}
	// The API server publishes a CRD's schema shortly after the CRD is
	// established.
	g.Eventually(func(g Gomega) {
		paths, err := dc.OpenAPIV3().Paths()
		g.Expect(err).NotTo(HaveOccurred())
		gv, ok := paths["apis/"+v1alpha1.GroupVersion.String()]
		g.Expect(ok).To(BeTrue(), "no OpenAPI v3 path for our group")
		b, err := gv.Schema("application/json")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(json.Unmarshal(b, &doc)).To(Succeed())
	}, 30*time.Second, 250*time.Millisecond).Should(Succeed())

	find := func(kind string) openAPISchema {
		for name, s := range doc.Components.Schemas {
			if strings.HasSuffix(name, ".v1alpha1."+kind) {
				return s
			}
		}
		t.Fatalf("no schema for %s among %d schemas", kind, len(doc.Components.Schemas))
		return openAPISchema{}
	}

	cuo := find(v1alpha1.ClusterUpgradeOperationKind)
	spec := cuo.Properties["spec"]
	g.Expect(spec.Required).To(ConsistOf("k8sClusterName", "region", "cloudProvider", "targetVersion"))
	g.Expect(spec.Properties["cloudProvider"].Enum).To(ConsistOf("eks", "gke", "aks", "ack", "mock"))
	ngs := spec.Properties["nodeGroupUpgrades"]
	g.Expect(ngs.Type).To(Equal("array"))
	g.Expect(ngs.Description).To(ContainSubstring("node groups to upgrade"))
	g.Expect(ngs.ListType).To(Equal("map"))
	g.Expect(ngs.ListMapKeys).To(Equal([]string{"nodeGroupName"}))
	g.Expect(ngs.Items).NotTo(BeNil())
	ng := ngs.Items
	g.Expect(ng.Required).To(ConsistOf("nodeGroupName", "strategy"))
	g.Expect(ng.Properties["strategy"].Enum).To(ConsistOf("blue-green", "in-place"))
	for field, fragment := range map[string]string{
		"nodeGroupName":            "existing node group",
		"strategy":                 "blue-green",
		"requiresVMStorageRollout": "Only valid with strategy blue-green",
		"newNodeGroupName":         "Required for blue-green",
		"vmClusterHelmValues":      "use {} when no VMCluster change is",
		"vmstorageSTSName":         "Omitted: vmstorage-<vmCluster name>",
		"vmstorageSTSNamespace":    "Omitted: the vmCluster's namespace",
		"vmCluster":                "Omitted: observability/vmcluster",
		"backupBeforeRollout":      "before anything of this node group moves",
	} {
		g.Expect(ng.Properties).To(HaveKey(field))
		g.Expect(ng.Properties[field].Description).To(ContainSubstring(fragment), field)
	}
	g.Expect(ng.Properties).To(HaveLen(9), "every field of a node group upgrade is documented above")

	backup := find(v1alpha1.ClusterBackupKind)
	g.Expect(backup.Properties["spec"].Properties["destination"].Properties["url"].Description).To(ContainSubstring("s3://<bucket>"))
	g.Expect(backup.Properties["status"].Properties["replicas"].Items.Properties).To(HaveKey("snapshotName"))
}
