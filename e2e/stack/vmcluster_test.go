package stack

import (
	"context"
	"maps"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// onVMStorageNodes is the nodeSelector of a component that runs on the
// stack's vmstorage node group.
var onVMStorageNodes = map[string]any{"node-role.observability/vmstorage": "true"}

// createVMCluster creates a VMCluster for the real VictoriaMetrics
// operator: retention of one month, replication factor 1 and one vmstorage
// replica with the fields of vmstorage added; spec adds further spec
// fields (vmselect, vminsert).
func createVMCluster(g Gomega, c client.Client, ns, name string, vmstorage, spec map[string]any) {
	storage := map[string]any{"replicaCount": int64(1)}
	maps.Copy(storage, vmstorage)
	all := map[string]any{"retentionPeriod": "1", "replicationFactor": int64(1), "vmstorage": storage}
	maps.Copy(all, spec)
	vmc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operator.victoriametrics.com/v1beta1",
		"kind":       "VMCluster",
		"metadata":   map[string]any{"namespace": ns, "name": name},
		"spec":       all,
	}}
	g.Expect(c.Create(context.Background(), vmc)).To(Succeed())
}
