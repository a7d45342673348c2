package upgrades_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/alibabacloud-go/tea/tea"
	"github.com/aliyun/credentials-go/credentials"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/idempotency"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/ack"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/ack/acktest"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/cloudtest"
)

const (
	ackCluster   = "prod"
	ackRegion    = "cn-hangzhou"
	ackClusterID = "c0123456789abcdef0123456789abcdef"
)

// newACKAPI serves the upgrade API with the ack provider against a fake
// ACK endpoint whose cluster is at 1.29.3-aliyun.1 and which offers
// 1.30.1-aliyun.1 and 1.30.2-aliyun.1 as its upgrades.
func newACKAPI(t *testing.T) (*api, *acktest.Server) {
	g := NewWithT(t)
	srv := acktest.New(t)
	srv.SetVersions("1.28.9-aliyun.1", "1.29.3-aliyun.1", "1.30.1-aliyun.1", "1.30.2-aliyun.1", "1.31.1-aliyun.1")
	srv.AddCluster(acktest.Cluster{ID: ackClusterID, Name: ackCluster, Region: ackRegion, Version: "1.29.3-aliyun.1"})
	cred, err := credentials.NewCredential(&credentials.Config{Type: tea.String("access_key"), AccessKeyId: tea.String("LTAIfakefakefakefake"), AccessKeySecret: tea.String("fake-secret")})
	g.Expect(err).NotTo(HaveOccurred())
	p, err := ack.New(ack.Options{Endpoint: srv.URL, Credential: cred})
	g.Expect(err).NotTo(HaveOccurred())
	reg := cloud.NewRegistry(p)
	reg.Clusters[cloud.ClusterKey(cloud.ACK, ackRegion, ackCluster)] = cloud.ClusterIdentity{ClusterID: ackClusterID}
	reg.Clusters[cloud.ClusterKey(cloud.ACK, ackRegion, "gone")] = cloud.ClusterIdentity{ClusterID: "cdeadbeef"}

	ns := env.NewNamespace(t)
	svc := &upgrades.Service{Reader: env.Client, Writer: env.Client, Namespace: ns, Providers: reg}
	e, err := server.New(server.Options{}, &upgrades.Handler{Svc: svc})
	g.Expect(err).NotTo(HaveOccurred())
	hs := httptest.NewServer(e)
	t.Cleanup(hs.Close)
	return &api{t: t, url: hs.URL, ns: ns}, srv
}

func ackRequest(version string) string {
	return fmt.Sprintf(`{"k8sClusterName":%q,"region":%q,"cloudProvider":"ack","targetVersion":%q,
  "nodeGroupUpgrades":[{"nodeGroupName":"pool-a","strategy":"in-place"}]}`, ackCluster, ackRegion, version)
}

// fieldViolations returns the violations of an error body by field.
func fieldViolations(g Gomega, b []byte) map[string]string {
	var e errorBody
	g.Expect(json.Unmarshal(b, &e)).To(Succeed(), string(b))
	out := map[string]string{}
	for _, d := range e.Error.Details {
		for _, v := range d.FieldViolations {
			out[v.Field] = v.Description
		}
	}
	return out
}

func TestACKMinorResolvedToNewestPatch(t *testing.T) {
	g := NewWithT(t)
	a, srv := newACKAPI(t)

	code, body := a.do(http.MethodPost, upgrades.BasePath+"/dry-run", ackRequest("1.30"), nil)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	g.Expect(a.manifest(body).Spec.TargetVersion).To(Equal("1.30.2-aliyun.1"), "dry-run reports the resolved version")
	g.Expect(a.manifest(body).Metadata.Annotations).To(HaveKeyWithValue(upgrades.AnnotationRequestedVersion, "1.30"))
	g.Expect(a.count()).To(Equal(0), "dry-run creates nothing")

	code, body = a.do(http.MethodPost, upgrades.BasePath, ackRequest("1.30"), nil)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
	op := a.op(body)
	g.Expect(op.Spec.TargetVersion).To(Equal("1.30.2-aliyun.1"), "the response reports the resolved version")
	obj := &opsv1.ClusterUpgradeOperation{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: a.ns, Name: op.Name}, obj)).To(Succeed())
	g.Expect(obj.Spec.TargetVersion).To(Equal("1.30.2-aliyun.1"), "the spec holds the full version")
	g.Expect(obj.Annotations).To(HaveKeyWithValue(upgrades.AnnotationRequestedVersion, "1.30"))

	// A full version that is available is taken as it is (once the first
	// operation is finished: one active upgrade per cluster).
	setStatus(g, a.ns, op.Name, func(st *opsv1.ClusterUpgradeOperationStatus) { st.Phase = opsv1.UpgradePhaseCancelled })
	code, body = a.do(http.MethodPost, upgrades.BasePath, ackRequest("1.30.1-aliyun.1"), nil)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
	g.Expect(a.op(body).Spec.TargetVersion).To(Equal("1.30.1-aliyun.1"))
	g.Expect(srv.Calls(acktest.DescribeKubernetesVersionMetadata)).To(Equal(3))
}

func TestACKUnavailableVersionIsA400ListingTheAvailableOnes(t *testing.T) {
	a, _ := newACKAPI(t)
	const listed = "available versions: 1.29.3-aliyun.1, 1.30.1-aliyun.1, 1.30.2-aliyun.1"
	for _, target := range []string{"1.31", "1.27", "1.30.3", "1.30.9-aliyun.1"} {
		t.Run(target, func(t *testing.T) {
			g := NewWithT(t)
			for _, path := range []string{upgrades.BasePath, upgrades.BasePath + "/dry-run"} {
				code, body := a.do(http.MethodPost, path, ackRequest(target), nil)
				g.Expect(code).To(Equal(http.StatusBadRequest), "%s: %s", path, body)
				v := fieldViolations(g, body)
				g.Expect(v).To(HaveKey("targetVersion"), string(body))
				g.Expect(v["targetVersion"]).To(ContainSubstring(target))
				g.Expect(v["targetVersion"]).To(HaveSuffix(listed))
			}
			g.Expect(a.count()).To(Equal(0))
		})
	}
}

func TestACKVersionListingErrors(t *testing.T) {
	g := NewWithT(t)
	a, srv := newACKAPI(t)
	srv.Inject(acktest.DescribeKubernetesVersionMetadata, 2, cloudtest.Throttle)
	for _, path := range []string{upgrades.BasePath, upgrades.BasePath + "/dry-run"} {
		code, body := a.do(http.MethodPost, path, ackRequest("1.30"), nil)
		g.Expect(code).To(Equal(http.StatusServiceUnavailable), "%s: %s", path, body)
	}
	srv.Inject(acktest.DescribeKubernetesVersionMetadata, 1, cloudtest.Permanent)
	code, body := a.do(http.MethodPost, upgrades.BasePath, ackRequest("1.30"), nil)
	g.Expect(code).To(Equal(http.StatusBadGateway), string(body))

	// A cluster mapped in the configuration that ACK does not have.
	code, body = a.do(http.MethodPost, upgrades.BasePath, `{"k8sClusterName":"gone","region":"cn-hangzhou","cloudProvider":"ack","targetVersion":"1.30"}`, nil)
	g.Expect(code).To(Equal(http.StatusNotFound), string(body))
	// A cluster without a mapping.
	code, body = a.do(http.MethodPost, upgrades.BasePath, `{"k8sClusterName":"unmapped","region":"cn-hangzhou","cloudProvider":"ack","targetVersion":"1.30"}`, nil)
	g.Expect(code).To(Equal(http.StatusBadRequest), string(body))
	g.Expect(fieldViolations(g, body)).To(HaveKey("cloudProvider"))
	g.Expect(a.count()).To(Equal(0))
}

func TestACKIdempotentRetryAfterANewPatch(t *testing.T) {
	g := NewWithT(t)
	a, srv := newACKAPI(t)
	hdr := map[string]string{idempotency.Header: "ack-req-1"}
	code, body := a.do(http.MethodPost, upgrades.BasePath, ackRequest("1.30"), hdr)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
	first := a.op(body)
	g.Expect(first.Spec.TargetVersion).To(Equal("1.30.2-aliyun.1"))

	// ACK releases a newer patch; the retry is still the same request.
	srv.SetVersions("1.29.3-aliyun.1", "1.30.1-aliyun.1", "1.30.2-aliyun.1", "1.30.3-aliyun.1")
	code, body = a.do(http.MethodPost, upgrades.BasePath, ackRequest("1.30"), hdr)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	again := a.op(body)
	g.Expect(again.ID).To(Equal(first.ID))
	g.Expect(again.Spec.TargetVersion).To(Equal("1.30.2-aliyun.1"))

	// A different request with the same key is still a conflict.
	code, body = a.do(http.MethodPost, upgrades.BasePath, ackRequest("1.30.3-aliyun.1"), hdr)
	g.Expect(code).To(Equal(http.StatusConflict), string(body))
	g.Expect(a.count()).To(Equal(1))
}
