package upgrades_test

import (
	"context"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tidbcloud/ops-server/apiserver/internal/idempotency"
	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestDryRunYAMLAppliesAsThePOSTWould: the dry run answered in YAML is a
// manifest (apiVersion, kind, metadata with a concrete name, spec with
// defaults) and nothing the API server sets; creating it as `kubectl
// apply -f` does gives the operation a POST gives, seen through the API.
// A dry run takes no lock (no Lease) and creates nothing.
func TestDryRunYAMLAppliesAsThePOSTWould(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t)
	ctx := context.Background()

	code, body := a.do(http.MethodPost, upgrades.BasePath+"/dry-run", seedRequest, map[string]string{"Accept": "application/yaml"})
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	var raw map[string]any
	g.Expect(yaml.UnmarshalStrict(body, &raw)).To(Succeed(), string(body))
	g.Expect(raw).To(HaveKeyWithValue("apiVersion", "ops.observability.tidbcloud.com/v1alpha1"))
	g.Expect(raw).To(HaveKeyWithValue("kind", "ClusterUpgradeOperation"))
	g.Expect(raw).To(HaveKey("spec"))
	g.Expect(raw).NotTo(HaveKey("status"))
	meta := raw["metadata"].(map[string]any)
	g.Expect(meta).To(HaveKey("name"))
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "generateName"} {
		g.Expect(meta).NotTo(HaveKey(k))
	}
	g.Expect(a.count()).To(Equal(0), "a dry run creates nothing")
	leases := &coordinationv1.LeaseList{}
	g.Expect(env.Client.List(ctx, leases, client.InNamespace(a.ns))).To(Succeed())
	g.Expect(leases.Items).To(BeEmpty(), "a dry run takes no cluster lock")

	// kubectl apply -f: the manifest as it is.
	applied := &opsv1.ClusterUpgradeOperation{}
	g.Expect(yaml.UnmarshalStrict(body, applied)).To(Succeed())
	g.Expect(env.Client.Create(ctx, applied)).To(Succeed())
	code, got := a.do(http.MethodGet, upgrades.BasePath+"/"+applied.Name, "", nil)
	g.Expect(code).To(Equal(http.StatusOK), string(got))
	fromManifest := a.op(got)

	setStatus(g, a.ns, applied.Name, func(st *opsv1.ClusterUpgradeOperationStatus) { st.Phase = opsv1.UpgradePhaseCancelled })
	code, got = a.do(http.MethodPost, upgrades.BasePath, seedRequest, nil)
	g.Expect(code).To(Equal(http.StatusAccepted), string(got))
	posted := a.op(got)
	g.Expect(fromManifest.Spec).To(Equal(posted.Spec))
	g.Expect(fromManifest.InitiatedBy).To(Equal(posted.InitiatedBy))
	g.Expect(fromManifest.Namespace).To(Equal(posted.Namespace))
	byPost := &opsv1.ClusterUpgradeOperation{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: posted.Name}, byPost)).To(Succeed())
	g.Expect(applied.Labels).To(Equal(byPost.Labels))
	g.Expect(applied.Annotations).To(Equal(byPost.Annotations))
}

// TestDryRunWithIdempotencyKeyNamesThePOSTsObject: with an
// Idempotency-Key the manifest carries the name (and key annotation) the
// POST with that key creates, so applying the manifest and POSTing are the
// same operation; the dry run does not take the key's operation.
func TestDryRunWithIdempotencyKeyNamesThePOSTsObject(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t)
	hdr := map[string]string{idempotency.Header: "git-commit-1"}
	code, body := a.do(http.MethodPost, upgrades.BasePath+"/dry-run", seedRequest, hdr)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	dry := a.manifest(body)
	g.Expect(dry.Metadata.Annotations).To(HaveKeyWithValue(opsv1.AnnotationIdempotencyKey, "git-commit-1"))
	g.Expect(a.count()).To(Equal(0))

	code, body = a.do(http.MethodPost, upgrades.BasePath, seedRequest, hdr)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
	g.Expect(a.op(body).Name).To(Equal(dry.Metadata.Name))
}

// TestDryRunAcceptNegotiation: JSON unless YAML is asked for and
// preferred.
func TestDryRunAcceptNegotiation(t *testing.T) {
	a := newAPI(t)
	cases := map[string]string{
		"":                 "application/json",
		"*/*":              "application/json",
		"application/json": "application/json",
		"application/yaml": "application/yaml",
		"text/yaml":        "application/yaml",
		"application/json;q=0.5, application/yaml": "application/yaml",
		"application/yaml;q=0.1, */*":              "application/json",
	}
	for accept, want := range cases {
		t.Run(accept, func(t *testing.T) {
			g := NewWithT(t)
			hdr := map[string]string{}
			if accept != "" {
				hdr["Accept"] = accept
			}
			resp := a.raw(http.MethodPost, upgrades.BasePath+"/dry-run", seedRequest, hdr)
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
			g.Expect(resp.Header.Get("Content-Type")).To(HavePrefix(want))
		})
	}
}
