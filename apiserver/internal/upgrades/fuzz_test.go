package upgrades_test

import (
	"context"
	"testing"

	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
)

// FuzzDecode feeds arbitrary bodies to the request decoder and validator:
// it must never panic; every rejection is a 400 with at least one field
// violation; every acceptance becomes an object the API server accepts too
// (server-side dry run, so the CRD's schema and CEL rules run).
func FuzzDecode(f *testing.F) {
	f.Add(seedRequest)
	f.Add(`{"k8sClusterName":"c","region":"r","cloudProvider":"mock","targetVersion":"1.30"}`)
	f.Add(`{"k8sClusterName":"c","region":"r","cloudProvider":"aks","targetVersion":"1.30.1","nodeGroupUpgrades":[{"nodeGroupName":"a","strategy":"blue-green","newNodeGroupName":"pool2"}]}`)
	f.Add(`{"k8sClusterName":"c","region":"r","cloudProvider":"ack","targetVersion":"1.31.1-aliyun.1","clusterAddons":[{"name":"terway","version":"v1.2.3"}]}`)
	f.Add(`{"k8sClusterName":"c","region":"r","cloudProvider":"mock","targetVersion":"1.30","nodeGroupUpgrades":[{"nodeGroupName":"a","strategy":"blue-green","newNodeGroupName":"b","requiresVMStorageRollout":true,"vmClusterHelmValues":{},"vmstorageSTSName":"s","vmstorageSTSNamespace":"n"}]}`)
	f.Add(`{"k8sClusterName":"Prod_Cluster-01","region":"r","cloudProvider":"eks","targetVersion":"1.30","nodeGroupUpgrades":[{"nodeGroupName":"NG_1","strategy":"blue-green","newNodeGroupName":"NG_2-"}]}`)
	f.Add(`{"k8sClusterName":"生产集群-01","region":"r","cloudProvider":"ack","targetVersion":"1.30","nodeGroupUpgrades":[{"nodeGroupName":"默认节点池","strategy":"in-place"}]}`)
	f.Add(`{"nodeGroupUpgrades":[{"strategy":"in-place","vmClusterHelmValues":null}]}`)
	f.Add(`{"k8sClusterName":"c","region":"r","cloudProvider":"mock","targetVersion":"1.30","nodeGroupUpgrades":[{"nodeGroupName":"a","strategy":"blue-green","newNodeGroupName":"b","requiresVMStorageRollout":true,"vmClusterHelmValues":{"vmstorage":{"replicaCount":2,"tolerations":[],"serviceAccountName":"x"},"vminsert":{}}}]}`)
	f.Add(`[]`)
	f.Add(`{"schedule":"2026-13-40T99:00:00Z"}`)
	svc := &upgrades.Service{Writer: env.Client, Namespace: "default"}
	f.Fuzz(func(t *testing.T, body string) {
		req, err := upgrades.Decode([]byte(body))
		if err != nil {
			if err.Code != 400 || len(err.Violations) == 0 {
				t.Fatalf("rejection without a field violation: %d %+v", err.Code, err)
			}
			return
		}
		if _, derr := svc.DryRun(context.Background(), req, ""); derr != nil {
			t.Fatalf("accepted by the REST validation but refused by the API server: %v\nbody: %s", derr, body)
		}
	})
}
