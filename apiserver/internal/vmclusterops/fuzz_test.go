package vmclusterops_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusterops"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// oneVMCluster resolves every id to the same vmcluster.
type oneVMCluster struct{ v vmclusters.VMCluster }

func (o oneVMCluster) Get(context.Context, string) (vmclusters.VMCluster, error) { return o.v, nil }

// FuzzDecode feeds arbitrary bodies to the decoder and validator: never a
// panic; every rejection names at least one field; every acceptance
// becomes a VMClusterOperation the API server accepts too (the CRD's
// schema and CEL rules never refuse what the REST validation let through).
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `{"type":"HorizontalScaling","horizontal_scaling":{"vmstorage":5,"vminsert":2,"vmselect":100}}`,
		`{"type":"VerticalScaling","vertical_scaling":{"vmstorage":{"requests":{"cpu":"500m","memory":"1Gi"},"limits":{"memory":"2Gi"}}}}`,
		`{"type":"VerticalScaling","vertical_scaling":{"vminsert":{"requests":{"cpu":"1e3"}}}}`,
		`{"type":"Restart","restart":{"components":["vmstorage","vmselect","vminsert"]},"order":["vminsert"],"step_timeout":"6h"}`,
		`{"type":"Restart","restart":{"components":["vmstorage"]},"step_timeout":"1m0s","paused":true}`,
		`{"type":"HorizontalScaling","horizontal_scaling":{"vmstorage":1},"acknowledge_replication_risk":true}`,
	} {
		f.Add(s)
	}
	ns := env.NewNamespace(f)
	svc := &vmclusterops.Service{Reader: informers, Writer: env.Client, Namespace: ns,
		VMClusters: oneVMCluster{vmclusters.VMCluster{Name: "vmclusters/fuzz", ID: "00000000-0000-0000-0000-000000000001",
			HelmReleaseInfo: vmclusters.HelmReleaseInfo{ReleaseName: "fuzz", ReleaseNamespace: ns}}}}
	f.Fuzz(func(t *testing.T, body string) {
		g := NewWithT(t)
		req, verr := vmclusterops.Decode([]byte(body))
		if verr != nil {
			g.Expect(verr.Violations).NotTo(BeEmpty(), "a rejection names a field")
			return
		}
		req.AcknowledgeReplicationRisk = true
		out, created, err := svc.Create(context.Background(), "fuzz", req, "", true)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(created).To(BeFalse())
		obj := out.(*opsv1.VMClusterOperation)
		obj.Name = "fuzz"
		g.Expect(env.Client.Create(context.Background(), obj, client.DryRunAll)).To(Succeed(), "the CRD refuses what REST accepted: %s", body)
	})
}
