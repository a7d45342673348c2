// Package authz tests the REST API's authentication, authorization and
// audit on a real kube-apiserver (which serves TokenReview and
// SubjectAccessReview) with real ServiceAccounts, Roles and RoleBindings.
// It walks every operation of the OpenAPI document, so a route added
// without a permission, or without a case here, fails it.
package authz

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/app"
	"github.com/tidbcloud/ops-server/apiserver/internal/auth"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/openapi"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var env *testenv.Environment

const adminToken = "authz-test-admin-token"

func TestMain(m *testing.M) {
	os.Exit(testenv.RunMain(m, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{opsv1.AddToScheme}},
		func(e *testenv.Environment) error { env = e; return nil }))
}

// auditLog collects the apiserver's audit lines.
type auditLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *auditLog) add(prefix, args string) {
	if !strings.Contains(prefix, "audit") {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, args)
}

func (l *auditLog) find(operation, user string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, fmt.Sprintf(`"operation"=%q`, operation)) && strings.Contains(line, fmt.Sprintf(`"user"=%q`, user)) {
			return line
		}
	}
	return ""
}

type fixture struct {
	t      *testing.T
	ns     string
	base   string
	kube   client.Client
	cs     *kubernetes.Clientset
	audits *auditLog
	routes map[string]server.Route
}

func start(t *testing.T) *fixture {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	mockNS := ns + "-cloud"
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mockNS}})).To(Succeed())
	p := &mock.Provider{Client: env.Client, Namespace: mockNS}
	g.Expect(p.Seed(ctx, cloud.ClusterRef{Provider: cloud.Mock, Name: "dev-cluster", Region: "local"}, mock.ClusterState{
		Version: "1.29",
		NodeGroups: map[string]*mock.NodeGroupState{
			"observability-ng": {Size: 1, InstanceTypes: []string{"m5.xlarge"}},
		},
		Addons: map[string]*mock.AddonState{"vpc-cni": {Version: "v1.18.3", AvailableVersions: []string{"v1.18.3", "v1.18.5"}}},
	})).To(Succeed())

	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	g.Expect(os.WriteFile(tokens, []byte(auth.HashToken(adminToken)+`,test-admin,,"system:masters"`+"\n"), 0o600)).To(Succeed())

	cfg := config.Default()
	cfg.ListenAddress = "127.0.0.1:0"
	cfg.LocalRepository.ListenAddress = "127.0.0.1:0"
	cfg.Namespace = ns
	cfg.Upgrades.Namespace = ns
	cfg.Upgrades.EnableMockCloud = true
	cfg.Upgrades.MockNamespace = mockNS
	cfg.Backups.Namespace = ns
	cfg.Backups.Destination = "fs:///var/backups/vm"
	cfg.Backups.FSRoots = []string{"/var/backups"}
	cfg.Backups.RestoresEnabled = true
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	cfg.Chart.LocalDir = filepath.Join(root, "deploy", "charts", "vmcluster")
	cfg.Catalog.LocalDir = filepath.Join(root, "apiserver", "test", "integration", "testdata", "catalog")
	cfg.Catalog.Charts = []config.CatalogChart{{Name: "greeter"}}
	cfg.Auth.TokenFile = tokens
	cfg.Auth.RateLimitQPS = 0
	g.Expect(cfg.Validate()).To(Succeed())

	audits := &auditLog{}
	log := funcr.New(audits.add, funcr.Options{})
	actx, cancel := context.WithCancel(ctx)
	a, err := app.New(actx, app.Options{Config: cfg, RESTConfig: env.Config, Logger: log})
	if err != nil {
		cancel()
		t.Fatalf("app.New: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	f := &fixture{t: t, ns: ns, base: "http://" + a.Addr(), kube: env.Client, audits: audits, routes: map[string]server.Route{}}
	f.cs, err = kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	for _, r := range a.Routes() {
		f.routes[r.Name] = r
	}
	g.Eventually(func() int {
		code, _ := f.do(http.MethodGet, "/readyz", "", "")
		return code
	}, 30*time.Second, 50*time.Millisecond).Should(Equal(http.StatusOK))
	return f
}

func (f *fixture) do(method, path, body, token string) (int, []byte) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.base+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(server.HeaderRequestID, "authz-test")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := contractClient(f.t, nil).Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// admin sends a request as the token file's system:masters user and wants
// a 2xx.
func (f *fixture) admin(method, path, body string) []byte {
	f.t.Helper()
	code, out := f.do(method, path, body, adminToken)
	if code/100 != 2 {
		f.t.Fatalf("setup %s %s: %d %s", method, path, code, out)
	}
	return out
}

// serviceAccount creates a ServiceAccount, binds it to a Role granting
// exactly perms (none: no Role), and returns its user name and a token.
func (f *fixture) serviceAccount(name string, perms ...auth.Permission) (string, string) {
	f.t.Helper()
	ctx := context.Background()
	g := NewWithT(f.t)
	g.Expect(f.kube.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}})).To(Succeed())
	if len(perms) > 0 {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}
		for _, p := range perms {
			role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{auth.Group}, Resources: []string{p.Resource}, Verbs: []string{p.Verb}})
		}
		g.Expect(f.kube.Create(ctx, role)).To(Succeed())
		g.Expect(f.kube.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: f.ns}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		})).To(Succeed())
	}
	tr, err := f.cs.CoreV1().ServiceAccounts(f.ns).CreateToken(ctx, name, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return "system:serviceaccount:" + f.ns + ":" + name, tr.Status.Token
}

// request is one call of an operation: its concrete path and body, the
// same path for a missing object (GETs of one object), and how to check
// that the caller was recorded on what it created.
type request struct {
	path, body  string
	missingPath string
	initiatedBy func(user string)
	// allowed is the status with the permission when not a 2xx (a route
	// that needs a kubelet answers for a Pod that is not there: the
	// request got past authorization); audit is a fragment its audit
	// line must hold.
	allowed int
	audit   string
}

const vmclustersPath = "/api/v1/observability-ops/vmclusters"

const componentsPath = "/api/v1/observability-ops/components"

func (f *fixture) component(name string) string {
	var v struct {
		ID string `json:"id"`
	}
	out := f.admin(http.MethodPost, componentsPath, fmt.Sprintf(`{"name":%q,"chart":"greeter"}`, name))
	NewWithT(f.t).Expect(json.Unmarshal(out, &v)).To(Succeed())
	return v.ID
}

const upgradeRequest = `{"k8sClusterName": "dev-cluster", "region": "local", "cloudProvider": "mock", "targetVersion": "1.30",
  "nodeGroupUpgrades": [{"nodeGroupName": "observability-ng", "strategy": "in-place", "requiresVMStorageRollout": false}]}`

func (f *fixture) vmcluster(name string) string {
	var v struct {
		ID string `json:"id"`
	}
	out := f.admin(http.MethodPost, vmclustersPath, fmt.Sprintf(`{"name":%q}`, name))
	NewWithT(f.t).Expect(json.Unmarshal(out, &v)).To(Succeed())
	return v.ID
}

func (f *fixture) upgrade(paused bool) string {
	f.finishUpgrades()
	var op struct {
		ID string `json:"id"`
	}
	NewWithT(f.t).Expect(json.Unmarshal(f.admin(http.MethodPost, "/ops/api/v1/upgradeOperations", upgradeRequest), &op)).To(Succeed())
	if paused {
		f.admin(http.MethodPut, "/ops/api/v1/upgradeOperations/"+op.ID+"/pause", "")
	}
	return op.ID
}

// upgradeWithGate is an upgrade with the approval gate BeforeNodeGroups.
func (f *fixture) upgradeWithGate() string {
	f.finishUpgrades()
	var op struct {
		ID string `json:"id"`
	}
	body := strings.Replace(upgradeRequest, `"targetVersion": "1.30",`, `"targetVersion": "1.30", "approvals": ["BeforeNodeGroups"],`, 1)
	NewWithT(f.t).Expect(json.Unmarshal(f.admin(http.MethodPost, "/ops/api/v1/upgradeOperations", body), &op)).To(Succeed())
	return op.ID
}

// finishUpgrades marks every operation of the fixture's namespace
// Succeeded (no operator runs here), so that the next POST for dev-cluster
// is not refused as a second active upgrade of the cluster.
func (f *fixture) finishUpgrades() {
	f.t.Helper()
	g := NewWithT(f.t)
	ctx := context.Background()
	var list opsv1.ClusterUpgradeOperationList
	g.Expect(f.kube.List(ctx, &list, client.InNamespace(f.ns))).To(Succeed())
	for i := range list.Items {
		op := &list.Items[i]
		if op.Status.Phase == opsv1.UpgradePhaseSucceeded {
			continue
		}
		patched := op.DeepCopy()
		patched.Status.Phase = opsv1.UpgradePhaseSucceeded
		g.Expect(f.kube.Status().Patch(ctx, patched, client.MergeFrom(op))).To(Succeed())
	}
}

// restartRequest is a VMClusterOperation request (no operator runs here:
// it stays Pending).
const restartRequest = `{"type":"Restart","restart":{"components":["vmstorage"]}}`

func (f *fixture) vmclusterOperation(vmclusterID string) string {
	var o struct {
		ID string `json:"id"`
	}
	NewWithT(f.t).Expect(json.Unmarshal(f.admin(http.MethodPost, vmclustersPath+"/"+vmclusterID+"/operations", restartRequest), &o)).To(Succeed())
	return o.ID
}

func (f *fixture) backup(vmclusterID string) string {
	var b struct {
		ID string `json:"id"`
	}
	NewWithT(f.t).Expect(json.Unmarshal(f.admin(http.MethodPost, vmclustersPath+"/"+vmclusterID+"/backups", `{}`), &b)).To(Succeed())
	return b.ID
}

// succeededBackup is a backup of the vmcluster marked Succeeded (no
// operator runs here), with one replica inside the fs roots.
func (f *fixture) succeededBackup(vmclusterID string) string {
	f.t.Helper()
	g := NewWithT(f.t)
	id := f.backup(vmclusterID)
	list := &opsv1.ClusterBackupList{}
	g.Eventually(func(g Gomega) {
		g.Expect(f.kube.List(context.Background(), list, client.InNamespace(f.ns))).To(Succeed())
		g.Expect(slices.ContainsFunc(list.Items, func(b opsv1.ClusterBackup) bool { return string(b.UID) == id })).To(BeTrue())
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	for i := range list.Items {
		b := &list.Items[i]
		if string(b.UID) != id {
			continue
		}
		patched := b.DeepCopy()
		patched.Status.Phase = opsv1.BackupPhaseSucceeded
		patched.Status.Replicas = []opsv1.ReplicaBackup{{Pod: "vmstorage-x-0", State: opsv1.ReplicaStateSucceeded, Destination: "fs:///var/backups/vm/x/" + b.Name + "/vmstorage-x-0"}}
		g.Expect(f.kube.Status().Patch(context.Background(), patched, client.MergeFrom(b))).To(Succeed())
	}
	return id
}

// restore creates a restore of backup into the vmcluster as the admin,
// once the server's cache has the backup Succeeded.
func (f *fixture) restore(vmclusterID, backup string) string {
	var r struct {
		ID string `json:"id"`
	}
	var body []byte
	NewWithT(f.t).Eventually(func(g Gomega) {
		// The server's cache may not have the backup's Succeeded status yet
		// (a 400 until it has).
		var code int
		code, body = f.do(http.MethodPost, vmclustersPath+"/"+vmclusterID+"/restores", `{"backup":"`+backup+`"}`, adminToken)
		g.Expect(code).To(Equal(http.StatusAccepted), "%s", body)
		g.Expect(json.Unmarshal(body, &r)).To(Succeed())
		g.Expect(r.ID).NotTo(BeEmpty(), "%s", body)
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	return r.ID
}

// backupSchedule creates a backup schedule of the vmcluster as the admin
// and returns its id.
func (f *fixture) backupSchedule(vmclusterID, name string) string {
	var b struct {
		ID string `json:"id"`
	}
	body := fmt.Sprintf(`{"name":"s-%s","schedule":"@daily","keep_last":2}`, name)
	NewWithT(f.t).Expect(json.Unmarshal(f.admin(http.MethodPost, vmclustersPath+"/"+vmclusterID+"/backupSchedules", body), &b)).To(Succeed())
	return b.ID
}

func (f *fixture) annotation(obj client.Object, user string) {
	f.t.Helper()
	NewWithT(f.t).Eventually(func() string {
		if err := f.kube.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err.Error()
		}
		return obj.GetAnnotations()[opsv1.AnnotationInitiatedBy]
	}, 10*time.Second, 50*time.Millisecond).Should(Equal(user), "initiated-by annotation of %s", obj.GetName())
}

// requests builds, for each operation id, a request that succeeds for a
// caller holding the operation's permission. Objects it needs are created
// first by the admin.
func (f *fixture) requests(op string, i int) (request, bool) {
	name := fmt.Sprintf("authz-%d", i)
	switch op {
	case "vmclusters.create":
		return request{path: vmclustersPath, body: fmt.Sprintf(`{"name":%q}`, name), initiatedBy: func(user string) {
			f.annotation(&helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}, user)
		}}, true
	case "components.create":
		return request{path: componentsPath, body: fmt.Sprintf(`{"name":%q,"chart":"greeter"}`, name), initiatedBy: func(user string) {
			f.annotation(&helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}, user)
		}}, true
	case "components.list":
		return request{path: componentsPath + "?page_size=5"}, true
	case "components.get":
		id := f.component(name)
		return request{path: componentsPath + "/" + id, missingPath: componentsPath + "/no-such-component"}, true
	case "components.update":
		id := f.component(name)
		return request{path: componentsPath + "/" + id, body: `{"values":{"message":"hi"}}`}, true
	case "components.delete":
		return request{path: componentsPath + "/" + f.component(name)}, true
	case "vmclusters.list":
		return request{path: vmclustersPath + "?page_size=5"}, true
	case "vmclusters.get":
		id := f.vmcluster(name)
		return request{path: vmclustersPath + "/" + id, missingPath: vmclustersPath + "/no-such-vmcluster"}, true
	case "vmclusters.update":
		id := f.vmcluster(name)
		return request{path: vmclustersPath + "/" + id, body: `{"values":{"vmstorage":{"replicaCount":2}}}`}, true
	case "vmclusters.delete":
		return request{path: vmclustersPath + "/" + f.vmcluster(name)}, true
	case "backups.create":
		id := f.vmcluster(name)
		return request{path: vmclustersPath + "/" + id + "/backups", body: `{}`, initiatedBy: func(user string) {
			list := &opsv1.ClusterBackupList{}
			NewWithT(f.t).Expect(f.kube.List(context.Background(), list, client.InNamespace(f.ns))).To(Succeed())
			found := slices.ContainsFunc(list.Items, func(b opsv1.ClusterBackup) bool { return b.Annotations[opsv1.AnnotationInitiatedBy] == user })
			NewWithT(f.t).Expect(found).To(BeTrue(), "no ClusterBackup initiated by %s", user)
		}}, true
	case "backups.list":
		return request{path: vmclustersPath + "/" + f.vmcluster(name) + "/backups"}, true
	case "backups.get":
		id := f.vmcluster(name)
		b := f.backup(id)
		return request{path: vmclustersPath + "/" + id + "/backups/" + b, missingPath: vmclustersPath + "/" + id + "/backups/no-such-backup"}, true
	case "backups.delete":
		id := f.vmcluster(name)
		return request{path: vmclustersPath + "/" + id + "/backups/" + f.backup(id)}, true
	case "restores.create":
		id := f.vmcluster(name)
		b := f.succeededBackup(id)
		f.restore(id, b) // the server's cache has the Succeeded backup now
		return request{path: vmclustersPath + "/" + id + "/restores", body: `{"backup":"` + b + `"}`, initiatedBy: func(user string) {
			list := &opsv1.ClusterRestoreList{}
			NewWithT(f.t).Expect(f.kube.List(context.Background(), list, client.InNamespace(f.ns))).To(Succeed())
			found := slices.ContainsFunc(list.Items, func(r opsv1.ClusterRestore) bool { return r.Annotations[opsv1.AnnotationInitiatedBy] == user })
			NewWithT(f.t).Expect(found).To(BeTrue(), "no ClusterRestore initiated by %s", user)
		}}, true
	case "restores.list":
		return request{path: vmclustersPath + "/" + f.vmcluster(name) + "/restores"}, true
	case "restores.get":
		id := f.vmcluster(name)
		return request{path: vmclustersPath + "/" + id + "/restores/" + f.restore(id, f.succeededBackup(id)), missingPath: vmclustersPath + "/" + id + "/restores/no-such-restore"}, true
	case "backupSchedules.create":
		id := f.vmcluster(name)
		return request{path: vmclustersPath + "/" + id + "/backupSchedules", body: fmt.Sprintf(`{"name":"s-%s","schedule":"@daily","keep_last":2}`, name), initiatedBy: func(user string) {
			f.annotation(&opsv1.ClusterBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "s-" + name, Namespace: f.ns}}, user)
		}}, true
	case "backupSchedules.list":
		return request{path: vmclustersPath + "/" + f.vmcluster(name) + "/backupSchedules"}, true
	case "backupSchedules.get":
		id := f.vmcluster(name)
		return request{path: vmclustersPath + "/" + id + "/backupSchedules/" + f.backupSchedule(id, name), missingPath: vmclustersPath + "/" + id + "/backupSchedules/no-such-schedule"}, true
	case "backupSchedules.update":
		id := f.vmcluster(name)
		return request{path: vmclustersPath + "/" + id + "/backupSchedules/" + f.backupSchedule(id, name), body: `{"schedule":"@hourly","keep_last":3}`}, true
	case "backupSchedules.delete":
		id := f.vmcluster(name)
		return request{path: vmclustersPath + "/" + id + "/backupSchedules/" + f.backupSchedule(id, name)}, true
	case "vmclusterOperations.create":
		id := f.vmcluster(name)
		return request{path: vmclustersPath + "/" + id + "/operations", body: restartRequest, initiatedBy: func(user string) {
			list := &opsv1.VMClusterOperationList{}
			NewWithT(f.t).Expect(f.kube.List(context.Background(), list, client.InNamespace(f.ns))).To(Succeed())
			found := slices.ContainsFunc(list.Items, func(o opsv1.VMClusterOperation) bool { return o.Annotations[opsv1.AnnotationInitiatedBy] == user })
			NewWithT(f.t).Expect(found).To(BeTrue(), "no VMClusterOperation initiated by %s", user)
		}}, true
	case "vmclusterOperations.list":
		return request{path: vmclustersPath + "/" + f.vmcluster(name) + "/operations?type=Restart"}, true
	case "vmclusterOperations.get":
		id := f.vmcluster(name)
		return request{path: vmclustersPath + "/" + id + "/operations/" + f.vmclusterOperation(id),
			missingPath: vmclustersPath + "/" + id + "/operations/no-such-operation"}, true
	case "vmclusterOperations.pause":
		id := f.vmcluster(name)
		return request{path: vmclustersPath + "/" + id + "/operations/" + f.vmclusterOperation(id) + "/pause"}, true
	case "vmclusterOperations.resume":
		id := f.vmcluster(name)
		return request{path: vmclustersPath + "/" + id + "/operations/" + f.vmclusterOperation(id) + "/resume"}, true
	case "vmclusterOperations.cancel":
		id := f.vmcluster(name)
		return request{path: vmclustersPath + "/" + id + "/operations/" + f.vmclusterOperation(id)}, true
	case "upgradeOperations.create":
		f.finishUpgrades()
		return request{path: "/ops/api/v1/upgradeOperations", body: upgradeRequest, initiatedBy: func(user string) {
			list := &opsv1.ClusterUpgradeOperationList{}
			NewWithT(f.t).Expect(f.kube.List(context.Background(), list, client.InNamespace(f.ns))).To(Succeed())
			found := slices.ContainsFunc(list.Items, func(o opsv1.ClusterUpgradeOperation) bool { return o.Annotations[opsv1.AnnotationInitiatedBy] == user })
			NewWithT(f.t).Expect(found).To(BeTrue(), "no ClusterUpgradeOperation initiated by %s", user)
		}}, true
	case "upgradeOperations.dryRun":
		return request{path: "/ops/api/v1/upgradeOperations/dry-run", body: upgradeRequest}, true
	case "providers.list":
		return request{path: "/ops/api/v1/providers"}, true
	case "upgradeOperations.preflight":
		return request{path: "/ops/api/v1/upgradeOperations/preflight", body: upgradeRequest}, true
	case "upgradeOperations.list":
		return request{path: "/ops/api/v1/upgradeOperations?k8sClusterName=dev-cluster"}, true
	case "upgradeOperations.get":
		return request{path: "/ops/api/v1/upgradeOperations/" + f.upgrade(false), missingPath: "/ops/api/v1/upgradeOperations/no-such-operation"}, true
	case "upgradeOperations.delete":
		return request{path: "/ops/api/v1/upgradeOperations/" + f.upgrade(false)}, true
	case "upgradeOperations.pause":
		return request{path: "/ops/api/v1/upgradeOperations/" + f.upgrade(false) + "/pause"}, true
	case "upgradeOperations.approve":
		return request{path: "/ops/api/v1/upgradeOperations/" + f.upgradeWithGate() + "/approve", body: `{"gate":"BeforeNodeGroups"}`,
			audit: `"gate"="BeforeNodeGroups"`}, true
	case "upgradeOperations.resume":
		return request{path: "/ops/api/v1/upgradeOperations/" + f.upgrade(true) + "/resume"}, true
	case "vmclusters.resources":
		return request{path: vmclustersPath + "/" + f.vmcluster(name) + "/resources", missingPath: vmclustersPath + "/no-such-vmcluster/resources"}, true
	case "vmclusters.events":
		return request{path: vmclustersPath + "/" + f.vmcluster(name) + "/events?type=Warning", missingPath: vmclustersPath + "/no-such-vmcluster/events"}, true
	case "upgradeOperations.events":
		return request{path: "/ops/api/v1/upgradeOperations/" + f.upgrade(false) + "/events?since=1h", missingPath: "/ops/api/v1/upgradeOperations/no-such-operation/events"}, true
	case "vmclusters.diagnostics":
		return request{path: vmclustersPath + "/" + f.vmcluster(name) + "/diagnostics", missingPath: vmclustersPath + "/no-such-vmcluster/diagnostics"}, true
	case "vmclusters.pods.list":
		return request{path: vmclustersPath + "/" + f.vmcluster(name) + "/pods", missingPath: vmclustersPath + "/no-such-vmcluster/pods"}, true
	case "vmclusters.pods.logs":
		id := f.vmcluster(name)
		return request{path: vmclustersPath + "/" + id + "/pods/no-such-pod/logs", allowed: http.StatusNotFound,
			missingPath: vmclustersPath + "/no-such-vmcluster/pods/no-such-pod/logs"}, true
	case "vmclusters.pods.exec":
		id := f.vmcluster(name)
		return request{path: vmclustersPath + "/" + id + "/pods/no-such-pod/exec", body: `{"command":["ls","/storage"]}`, allowed: http.StatusNotFound,
			audit: `"command"=["ls" "/storage"]`}, true
	case "bootstrap.get":
		return request{path: "/api/v1/observability-ops/bootstrap"}, true
	case "nodeGroups.list":
		return request{path: "/ops/api/v1/nodeGroups?k8sClusterName=dev-cluster&region=local&cloudProvider=mock"}, true
	case "addons.list":
		return request{path: "/ops/api/v1/addons?k8sClusterName=dev-cluster&region=local&cloudProvider=mock"}, true
	}
	return request{}, false
}

// public are the operations served without a token.
var public = map[string]bool{"healthz": true, "readyz": true, "metrics": true, "openapi": true, "version": true, "docs": true, "docs.viewer": true}

func TestEveryRouteIsAuthenticatedAndAuthorized(t *testing.T) {
	f := start(t)
	ops, err := openapi.Operations(openapi.Document)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(ops))
	for k := range ops {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	_, nobodyToken := f.serviceAccount("nobody")

	for i, key := range keys {
		op := ops[key]
		method, _, _ := strings.Cut(key, " ")
		t.Run(op, func(t *testing.T) {
			f.t = t
			g := NewWithT(t)
			if public[op] {
				code, body := f.do(method, strings.Replace(strings.SplitN(key, " ", 2)[1], "{", "", -1), "", "")
				g.Expect(code).To(Equal(http.StatusOK), "public %s without a token: %s", op, body)
				return
			}
			r, ok := f.routes[op]
			if !ok {
				t.Fatalf("operation %s of the OpenAPI document is not a route of the server", op)
			}
			g.Expect(r.Public).To(BeFalse(), "%s is public but not in the test's list of public operations", op)
			req, ok := f.requests(op, i)
			if !ok {
				t.Fatalf("no case for operation %s: add one to requests (and a permission to its route)", op)
			}

			code, body := f.do(method, req.path, req.body, "")
			g.Expect(code).To(Equal(http.StatusUnauthorized), "no token: %s", body)

			code, body = f.do(method, req.path, req.body, "not-a-token")
			g.Expect(code).To(Equal(http.StatusUnauthorized), "bad token: %s", body)

			perm := auth.Permission{Verb: r.Verb, Resource: r.Resource, Namespace: f.ns}
			code, body = f.do(method, req.path, req.body, nobodyToken)
			g.Expect(code).To(Equal(http.StatusForbidden), "no permission: %s", body)
			g.Expect(string(body)).To(ContainSubstring(fmt.Sprintf("cannot %s", strings.ReplaceAll(perm.String(), `"`, `\"`))))
			if req.missingPath != "" {
				// Forbidden callers learn nothing about what exists.
				code2, body2 := f.do(method, req.missingPath, req.body, nobodyToken)
				g.Expect(code2).To(Equal(code))
				g.Expect(string(body2)).To(Equal(string(body)))
			}

			// A Role with another permission is not enough.
			other := auth.Permission{Verb: "get", Resource: "somethingelse"}
			_, wrongToken := f.serviceAccount(fmt.Sprintf("wrong-%d", i), other)
			code, body = f.do(method, req.path, req.body, wrongToken)
			g.Expect(code).To(Equal(http.StatusForbidden), "unrelated Role: %s", body)

			user, token := f.serviceAccount(fmt.Sprintf("sa-%d", i), perm)
			code, body = f.do(method, req.path, req.body, token)
			if req.allowed != 0 {
				g.Expect(code).To(Equal(req.allowed), "with exactly %s: %s", perm, body)
			} else {
				g.Expect(code/100).To(Equal(2), "with exactly %s: %d %s", perm, code, body)
			}

			if method != http.MethodGet {
				g.Expect(f.audits.find(op, user)).To(And(ContainSubstring(`"requestID"="authz-test"`), ContainSubstring(req.audit)), "audit line of %s by %s", op, user)
			}
			if req.initiatedBy != nil {
				req.initiatedBy(user)
			}
		})
	}
}

// The dev token file and the TokenReview path both work, and an Event
// names the caller of a mutating request.
func TestEventNamesTheCaller(t *testing.T) {
	f := start(t)
	f.admin(http.MethodPost, vmclustersPath, `{"name":"evented"}`)
	NewWithT(t).Eventually(func() string {
		list := &corev1.EventList{}
		if err := f.kube.List(context.Background(), list, client.InNamespace(f.ns)); err != nil {
			return err.Error()
		}
		var buf bytes.Buffer
		for _, e := range list.Items {
			if e.InvolvedObject.Name == "evented" {
				fmt.Fprintf(&buf, "%s %s\n", e.Reason, e.Message)
			}
		}
		return buf.String()
	}, 20*time.Second, 100*time.Millisecond).Should(And(ContainSubstring("CreatedThroughAPI"), ContainSubstring(`"test-admin"`)))
}

// restore_from on a vmcluster create needs the permission of
// restores.create besides vmclusters.create (seeding reads another
// vmcluster's data): without it a 403 that creates nothing; with both the
// vmcluster and its seeding restore are created, the restore initiated by
// the caller.
func TestRestoreFromNeedsRestoresCreate(t *testing.T) {
	f := start(t)
	g := NewWithT(t)
	id := f.vmcluster("source")
	b := f.succeededBackup(id)
	f.restore(id, b) // the server's cache has the Succeeded backup now
	create := auth.Permission{Verb: "create", Resource: "vmclusters", Namespace: f.ns}
	restore := auth.Permission{Verb: "create", Resource: "clusterrestores", Namespace: f.ns}
	body := `{"name":"seeded","values":{"vmstorage":{"replicaCount":1}},"restore_from":{"backup":"` + b + `"}}`

	_, onlyCreate := f.serviceAccount("only-create", create)
	code, resp := f.do(http.MethodPost, vmclustersPath, body, onlyCreate)
	g.Expect(code).To(Equal(http.StatusForbidden), "%s", resp)
	g.Expect(string(resp)).To(ContainSubstring(`cannot create resource \"clusterrestores\"`))
	code, _ = f.do(http.MethodGet, vmclustersPath+"/seeded", "", adminToken)
	g.Expect(code).To(Equal(http.StatusNotFound), "nothing created")
	err := f.kube.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: opsv1.VMStorageHoldConfigMapName("seeded")}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no hold ConfigMap: %v", err)

	user, both := f.serviceAccount("create-and-restore", create, restore)
	code, resp = f.do(http.MethodPost, vmclustersPath, body, both)
	g.Expect(code).To(Equal(http.StatusAccepted), "%s", resp)
	rs := &opsv1.ClusterRestore{}
	g.Expect(f.kube.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: opsv1.SeedRestoreName("seeded")}, rs)).To(Succeed())
	g.Expect(rs.Spec.VMCluster.Name).To(Equal("seeded"))
	g.Expect(rs.Annotations).To(HaveKeyWithValue(opsv1.AnnotationInitiatedBy, user))
	hold := &corev1.ConfigMap{}
	g.Expect(f.kube.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: opsv1.VMStorageHoldConfigMapName("seeded")}, hold)).To(Succeed())
	g.Expect(hold.Data).To(Equal(map[string]string{"vmstorage-seeded-0": f.ns + "/seed-seeded "}), "the replica is held before the release exists")

	// A replica count the backup cannot seed: 400 naming the field.
	code, resp = f.do(http.MethodPost, vmclustersPath, `{"name":"misfit","values":{"vmstorage":{"replicaCount":3},"replicationFactor":1},"restore_from":{"backup":"`+b+`"}}`, both)
	g.Expect(code).To(Equal(http.StatusBadRequest), "%s", resp)
	g.Expect(string(resp)).To(ContainSubstring(`"field":"restore_from.backup"`))
}
