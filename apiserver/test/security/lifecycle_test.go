package security

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Item 6 (REST part) and item 8 of the security model: a PUT that would
// lose vmstorage data needs allow_data_loss; a stale etag changes nothing; a vmcluster a
// backup or a vmstorage rollout is working on cannot be deleted, and its
// backups stay readable after it is gone.

const vmPath = "/api/v1/observability-ops/vmclusters"

// doWith sends one request as the admin with extra headers and returns
// the status, the headers and the body.
func (f *fixture) doWith(method, path, body string, hdr map[string]string) (int, http.Header, []byte) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.base+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := contractClient(f.t, nil).Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header, out
}

// release reads the HelmRelease of vmcluster name from the API server.
func (f *fixture) release(name string) *helmv2.HelmRelease {
	f.t.Helper()
	hr := &helmv2.HelmRelease{}
	NewWithT(f.t).Expect(f.kube.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, hr)).To(Succeed())
	return hr
}

// errorInfo returns the reason, metadata and violated fields of an error
// body.
func errorInfo(t *testing.T, b []byte) (reason string, meta map[string]string, fields []string) {
	t.Helper()
	var body struct {
		Error struct {
			Details []struct {
				Reason          string            `json:"reason"`
				Metadata        map[string]string `json:"metadata"`
				FieldViolations []struct {
					Field string `json:"field"`
				} `json:"fieldViolations"`
			} `json:"details"`
		} `json:"error"`
	}
	NewWithT(t).Expect(json.Unmarshal(b, &body)).To(Succeed(), string(b))
	for _, d := range body.Error.Details {
		if d.Reason != "" {
			reason, meta = d.Reason, d.Metadata
		}
		for _, v := range d.FieldViolations {
			fields = append(fields, v.Field)
		}
	}
	return reason, meta, fields
}

// mergeValues patches spec.values of a HelmRelease as kubectl would,
// optionally setting annotations in the same update.
func mergeValues(hr *helmv2.HelmRelease, values string, annotations map[string]string) error {
	patch := map[string]any{"spec": map[string]any{"values": json.RawMessage(values)}}
	if annotations != nil {
		patch["metadata"] = map[string]any{"annotations": annotations}
	}
	raw, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	return env.Client.Patch(context.Background(), hr.DeepCopy(), client.RawPatch(types.MergePatchType, raw))
}

func TestLifecyclePutDataLoss(t *testing.T) {
	g := NewWithT(t)
	f := start(t, nil)

	initial := `{"retentionPeriod":"1y","vmstorage":{"storage":{"size":"50Gi","storageClassName":"fast"}}}`
	code, b := f.do(http.MethodPost, vmPath, `{"name":"c1","values":`+initial+`}`)
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	before := f.release("c1")

	for _, tc := range []struct {
		name, values string
		allow        bool
		field        string
	}{
		{name: "shorter retention", values: `{"retentionPeriod":"1d","vmstorage":{"storage":{"size":"50Gi","storageClassName":"fast"}}}`, field: "values.retentionPeriod"},
		{name: "retention dropped (the default is one month)", values: `{"vmstorage":{"storage":{"size":"50Gi","storageClassName":"fast"}}}`, field: "values.retentionPeriod"},
		{name: "emptyDir", values: `{"retentionPeriod":"1y","vmstorage":{"storage":{"emptyDir":true}}}`, field: "values.vmstorage.storage.emptyDir"},
		{name: "shrink, even allowed", values: `{"retentionPeriod":"1y","vmstorage":{"storage":{"size":"20Gi","storageClassName":"fast"}}}`, allow: true, field: "values.vmstorage.storage.size"},
		{name: "other class, even allowed", values: `{"retentionPeriod":"1y","vmstorage":{"storage":{"size":"50Gi","storageClassName":"slow"}}}`, allow: true, field: "values.vmstorage.storage.storageClassName"},
	} {
		body := `{"values":` + tc.values
		if tc.allow {
			body += `,"allow_data_loss":true`
		}
		code, b := f.do(http.MethodPut, vmPath+"/c1", body+"}")
		g.Expect(code).To(Equal(http.StatusBadRequest), "%s: %s", tc.name, b)
		reason, _, fields := errorInfo(t, b)
		g.Expect(reason).To(Equal(vmclusters.ReasonDataLoss), tc.name)
		g.Expect(fields).To(Equal([]string{tc.field}), tc.name)
		after := f.release("c1")
		g.Expect(after.Generation).To(Equal(before.Generation), "%s: nothing changed", tc.name)
		g.Expect(after.Spec.Values.Raw).To(MatchJSON(initial), tc.name)
	}

	// POST refuses the acknowledgement: a create has nothing to lose.
	code, b = f.do(http.MethodPost, vmPath, `{"name":"c2","allow_data_loss":true}`)
	g.Expect(code).To(Equal(http.StatusBadRequest), string(b))
	_, _, fields := errorInfo(t, b)
	g.Expect(fields).To(Equal([]string{"allow_data_loss"}))

	// The REST PUT with allow_data_loss passes the policy too.
	code, b = f.do(http.MethodPut, vmPath+"/c1", `{"values":{"retentionPeriod":"1d","vmstorage":{"storage":{"emptyDir":true}}},"allow_data_loss":true}`)
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	g.Expect(f.release("c1").Spec.Values.Raw).To(MatchJSON(`{"retentionPeriod":"1d","vmstorage":{"storage":{"emptyDir":true}}}`))
}

func TestLifecycleETag(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := start(t, nil)
	code, b := f.do(http.MethodPost, vmPath, `{"name":"c1","values":{"retentionPeriod":"2"}}`)
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))

	code, hdr, b := f.doWith(http.MethodGet, vmPath+"/c1", "", nil)
	g.Expect(code).To(Equal(http.StatusOK), string(b))
	var got vmclusters.VMCluster
	g.Expect(json.Unmarshal(b, &got)).To(Succeed())
	g.Expect(got.ETag).NotTo(BeEmpty())
	g.Expect(hdr.Get("ETag")).To(Equal(`"` + got.ETag + `"`))

	// A status write (as Flux makes all the time) leaves the etag alone.
	hr := f.release("c1")
	patched := hr.DeepCopy()
	patched.Status.ObservedGeneration = hr.Generation
	patched.Status.LastAttemptedRevision = "0.1.0"
	g.Expect(env.Client.Status().Patch(ctx, patched, client.MergeFrom(hr))).To(Succeed())
	g.Eventually(func() string {
		_, h, _ := f.doWith(http.MethodGet, vmPath+"/c1", "", nil)
		return h.Get("ETag")
	}, 10*time.Second, 100*time.Millisecond).Should(Equal(`"` + got.ETag + `"`))
	g.Expect(f.release("c1").ResourceVersion).NotTo(Equal(hr.ResourceVersion))

	// A change with kubectl makes the etag stale: PUT and DELETE with it
	// answer 412 and change nothing.
	g.Expect(mergeValues(f.release("c1"), `{"retentionPeriod":"3"}`, nil)).To(Succeed())
	changed := f.release("c1")
	for _, req := range []struct{ method, body string }{
		{http.MethodPut, `{"values":{"retentionPeriod":"4"}}`},
		{http.MethodDelete, ""},
	} {
		code, _, b := f.doWith(req.method, vmPath+"/c1", req.body, map[string]string{"If-Match": `"` + got.ETag + `"`})
		g.Expect(code).To(Equal(http.StatusPreconditionFailed), "%s: %s", req.method, b)
		reason, _, _ := errorInfo(t, b)
		g.Expect(reason).To(Equal(vmclusters.ReasonETagMismatch))
	}
	// The etag echoed in the body counts as much as the header.
	code, b = f.do(http.MethodPut, vmPath+"/c1", `{"values":{"retentionPeriod":"4"},"etag":"`+got.ETag+`"}`)
	g.Expect(code).To(Equal(http.StatusPreconditionFailed), string(b))
	now := f.release("c1")
	g.Expect(now.Generation).To(Equal(changed.Generation))
	g.Expect(now.DeletionTimestamp).To(BeNil())
	g.Expect(now.Spec.Values.Raw).To(MatchJSON(`{"retentionPeriod":"3"}`))

	// With the current etag both work.
	_, hdr, _ = f.doWith(http.MethodGet, vmPath+"/c1", "", nil)
	code, hdr2, b := f.doWith(http.MethodPut, vmPath+"/c1", `{"values":{"retentionPeriod":"4"}}`, map[string]string{"If-Match": hdr.Get("ETag")})
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	g.Expect(hdr2.Get("ETag")).NotTo(Equal(hdr.Get("ETag")))
	code, _, b = f.doWith(http.MethodDelete, vmPath+"/c1", "", map[string]string{"If-Match": hdr2.Get("ETag")})
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
}

func TestLifecycleDeleteInUse(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// The vmcluster whose VMCluster a vmstorage rollout targets today is
	// observability/vmcluster: serve that namespace.
	vmNS := opsv1.VMClusterNamespace
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: vmNS}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	f := start(t, func(c *config.Config) { c.Namespace = vmNS })
	code, b := f.do(http.MethodPost, vmPath, `{"name":"`+opsv1.VMClusterName+`"}`)
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: vmNS, Name: opsv1.VMClusterName}})
	})

	// A backup applied with kubectl next to its VMCluster, running.
	backup := &opsv1.ClusterBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: vmNS, Name: "nightly"},
		Spec: opsv1.ClusterBackupSpec{
			VMCluster:   opsv1.VMClusterReference{Namespace: vmNS, Name: opsv1.VMClusterName},
			Destination: opsv1.BackupDestination{URL: "s3://bucket/path"},
		},
	}
	g.Expect(env.Client.Create(ctx, backup)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, backup) })
	setPhase := func(obj client.Object, set func()) {
		base := obj.DeepCopyObject().(client.Object)
		set()
		g.Expect(env.Client.Status().Patch(ctx, obj, client.MergeFrom(base))).To(Succeed())
	}
	setPhase(backup, func() { backup.Status.Phase = opsv1.BackupPhaseRunning })

	deleteRefused := func(kind, name string) {
		g.Eventually(func(g Gomega) {
			code, b := f.do(http.MethodDelete, vmPath+"/"+opsv1.VMClusterName, "")
			g.Expect(code).To(Equal(http.StatusConflict), string(b))
			reason, meta, _ := errorInfo(t, b)
			g.Expect(reason).To(Equal(vmclusters.ReasonInUse))
			g.Expect(meta).To(HaveKeyWithValue("blockerKind", kind))
			g.Expect(meta).To(HaveKeyWithValue("blockerName", name))
			g.Expect(string(b)).To(ContainSubstring(name))
		}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
		hr := &helmv2.HelmRelease{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: vmNS, Name: opsv1.VMClusterName}, hr)).To(Succeed())
		g.Expect(hr.DeletionTimestamp).To(BeNil(), "nothing deleted")
	}
	deleteRefused(opsv1.ClusterBackupKind, "nightly")

	// The backup finishes; an upgrade with a vmstorage rollout runs.
	setPhase(backup, func() { backup.Status.Phase = opsv1.BackupPhaseSucceeded })
	op := &opsv1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "move-vmstorage"},
		Spec: opsv1.ClusterUpgradeOperationSpec{
			CloudProvider: opsv1.CloudProvider("mock"), Region: "local", K8sClusterName: "dev-cluster", TargetVersion: "1.30",
			NodeGroupUpgrades: []opsv1.NodeGroupUpgrade{{
				NodeGroupName: "vmstorage", Strategy: opsv1.StrategyBlueGreen, NewNodeGroupName: "vmstorage-new",
				RequiresVMStorageRollout: true, VMClusterHelmValues: opsv1.VMClusterHelmValues{},
			}},
		},
	}
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())
	setPhase(op, func() { op.Status.Phase = opsv1.UpgradePhaseRunning })
	deleteRefused(opsv1.ClusterUpgradeOperationKind, "move-vmstorage")

	// Both finished: the delete goes through, and the backup stays
	// readable by the vmcluster's name.
	setPhase(op, func() { op.Status.Phase = opsv1.UpgradePhaseCancelled })
	g.Eventually(func() int {
		code, _ := f.do(http.MethodDelete, vmPath+"/"+opsv1.VMClusterName, "")
		return code
	}, 10*time.Second, 100*time.Millisecond).Should(Equal(http.StatusAccepted))
}

func TestLifecycleBackupsOutliveTheirVMCluster(t *testing.T) {
	g := NewWithT(t)
	f := start(t, func(c *config.Config) { c.Backups.Destination = "s3://bucket/path"; c.Backups.CredentialsSecret = "" })
	code, b := f.do(http.MethodPost, vmPath, `{"name":"c1"}`)
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	code, b = f.do(http.MethodPost, vmPath+"/c1/backups", `{"destination":{"credentials_secret":""}}`)
	g.Expect(code).To(Equal(http.StatusAccepted), string(b))
	var backup struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	g.Expect(json.Unmarshal(b, &backup)).To(Succeed())
	// Mark it finished, as ops-operator would, so the delete is allowed.
	obj := &opsv1.ClusterBackup{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: backup.Name[strings.LastIndex(backup.Name, "/")+1:]}, obj)).To(Succeed())
	base := obj.DeepCopy()
	obj.Status.Phase = opsv1.BackupPhaseSucceeded
	g.Expect(env.Client.Status().Patch(context.Background(), obj, client.MergeFrom(base))).To(Succeed())

	g.Eventually(func() int {
		code, _ := f.do(http.MethodDelete, vmPath+"/c1", "")
		return code
	}, 10*time.Second, 100*time.Millisecond).Should(Equal(http.StatusAccepted))
	g.Eventually(func() int {
		code, _ := f.do(http.MethodGet, vmPath+"/c1", "")
		return code
	}, 10*time.Second, 100*time.Millisecond).Should(Equal(http.StatusNotFound))

	code, b = f.do(http.MethodGet, vmPath+"/c1/backups", "")
	g.Expect(code).To(Equal(http.StatusOK), string(b))
	g.Expect(string(b)).To(ContainSubstring(backup.ID))
	code, b = f.do(http.MethodGet, vmPath+"/c1/backups/"+backup.ID, "")
	g.Expect(code).To(Equal(http.StatusOK), string(b))
	// No new backup of it.
	code, b = f.do(http.MethodPost, vmPath+"/c1/backups", `{}`)
	g.Expect(code).To(Equal(http.StatusNotFound), string(b))
	g.Expect(bytes.Contains(b, []byte(vmclusters.ReasonNotFound))).To(BeTrue(), string(b))
}
