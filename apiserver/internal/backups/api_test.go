package backups_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/backups"
	"github.com/tidbcloud/ops-server/apiserver/internal/config"
	"github.com/tidbcloud/ops-server/apiserver/internal/idempotency"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters/vmclusterstest"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var (
	env *testenv.Environment
	// informers is the informer cache the services read from, as in
	// ops-apiserver: managed HelmReleases (indexed by UID) and
	// ClusterBackups of every namespace.
	informers cache.Cache
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	env, err = testenv.Start(testenv.Options{AddToScheme: []func(*runtime.Scheme) error{opsv1.AddToScheme}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	informers, err = vmclusterstest.StartCache(ctx, env, &opsv1.ClusterBackup{}, &opsv1.ClusterBackupSchedule{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

const caller = "system:serviceaccount:ci:robot"

type api struct {
	t   *testing.T
	url string
	// ns holds the vmclusters; backupNS the ClusterBackups.
	ns, backupNS string
	vm           *vmclusters.Service
}

type apiOptions struct {
	defaults config.BackupsConfig
	// separateBackupNamespace puts the ClusterBackups in a namespace of
	// their own instead of the vmclusters'.
	separateBackupNamespace bool
}

// newAPI serves the backup API, resolving vmclusters through a real
// vmclusters service, both reading from the informer cache.
func newAPI(t *testing.T, o apiOptions) *api {
	ns := env.NewNamespace(t)
	backupNS := ns
	if o.separateBackupNamespace {
		backupNS = env.NewNamespace(t)
	}
	vm := &vmclusters.Service{
		Store: &vmclusters.KubeStore{Cache: informers, Client: client.WithFieldOwner(env.Client, "ops-server"), Namespace: ns, CacheWait: 10 * time.Second},
		Translator: vmclusters.Translator{
			Namespace: ns, Chart: vmclusters.ChartSource{Name: "vmcluster", DefaultVersion: "0.1.0", URL: "http://127.0.0.1:1"},
			Flux: config.Default().Flux,
		},
	}
	if o.defaults.FSRoots == nil {
		o.defaults.FSRoots = []string{"/backups", "/var/backups"}
	}
	// The Secrets the tests name, opted in to backups.
	for _, name := range []string{"backup-credentials", "gcs-key"} {
		NewWithT(t).Expect(env.Client.Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: backupNS, Name: name, Labels: map[string]string{opsv1.BackupCredentialsLabel: "true"}},
		})).To(Succeed())
	}
	svc := &backups.Service{
		Reader: informers, Writer: env.Client, Namespace: backupNS, VMClusters: vm,
		Defaults: o.defaults, Caller: func(context.Context) string { return caller }, CacheWait: 10 * time.Second,
	}
	e, err := server.New(server.Options{}, &backups.Handler{Svc: svc}, &backups.ScheduleHandler{Svc: svc})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return &api{t: t, url: srv.URL, ns: ns, backupNS: backupNS, vm: vm}
}

// vmcluster creates the HelmRelease of a vmcluster (no Flux runs: it stays
// CREATING, which is enough to back it up) and returns its id.
func (a *api) vmcluster(name string) string {
	a.t.Helper()
	g := NewWithT(a.t)
	hr := a.vm.Translator.Release(vmclusters.CreateRequest{Name: name, Values: []byte(`{}`)}, time.Now())
	g.Expect(env.Client.Create(context.Background(), hr)).To(Succeed())
	g.Eventually(func() error {
		_, err := a.vm.Get(context.Background(), string(hr.UID))
		return err
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	return string(hr.UID)
}

func (a *api) path(vmcluster string, rest ...string) string {
	return "/api/v1/observability-ops/vmclusters/" + vmcluster + "/backups" + strings.Join(rest, "")
}

func (a *api) do(method, path, body string, hdr map[string]string) (int, []byte) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.url+path, bytes.NewBufferString(body))
	NewWithT(a.t).Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := contractClient(a.t, nil).Do(req)
	NewWithT(a.t).Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// create POSTs body and expects a 202.
func (a *api) create(vmcluster, body string) backups.Backup {
	a.t.Helper()
	code, b := a.do(http.MethodPost, a.path(vmcluster), body, nil)
	NewWithT(a.t).Expect(code).To(Equal(http.StatusAccepted), string(b))
	return a.backup(b)
}

func (a *api) backup(b []byte) backups.Backup {
	a.t.Helper()
	var out backups.Backup
	NewWithT(a.t).Expect(json.Unmarshal(b, &out)).To(Succeed(), string(b))
	return out
}

func (a *api) object(name string) *opsv1.ClusterBackup {
	a.t.Helper()
	obj := &opsv1.ClusterBackup{}
	NewWithT(a.t).Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: a.backupNS, Name: name}, obj)).To(Succeed())
	return obj
}

func (a *api) count() int {
	a.t.Helper()
	list := &opsv1.ClusterBackupList{}
	NewWithT(a.t).Expect(env.Client.List(context.Background(), list, client.InNamespace(a.backupNS))).To(Succeed())
	return len(list.Items)
}

// shortName is the object name of a backup resource name.
func shortName(b backups.Backup) string {
	return b.Name[strings.LastIndex(b.Name, "/")+1:]
}

type errorBody struct {
	Error struct {
		Code    int    `json:"code"`
		Status  string `json:"status"`
		Message string `json:"message"`
		Details []struct {
			Reason          string `json:"reason"`
			FieldViolations []struct {
				Field       string `json:"field"`
				Description string `json:"description"`
			} `json:"fieldViolations"`
		} `json:"details"`
	} `json:"error"`
}

func parseError(t *testing.T, b []byte) (reason string, violations map[string]string) {
	t.Helper()
	var e errorBody
	NewWithT(t).Expect(json.Unmarshal(b, &e)).To(Succeed(), string(b))
	violations = map[string]string{}
	for _, d := range e.Error.Details {
		if d.Reason != "" {
			reason = d.Reason
		}
		for _, v := range d.FieldViolations {
			violations[v.Field] = v.Description
		}
	}
	return reason, violations
}

var s3Defaults = config.BackupsConfig{Destination: "s3://o11y-backups/prod", CredentialsSecret: "backup-credentials", CredentialsSecretKey: "credentials"}

func TestCreateWithServerDefaults(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t, apiOptions{defaults: s3Defaults})
	id := a.vmcluster("vmcluster")

	b := a.create("vmcluster", "")
	g.Expect(b.Name).To(HavePrefix("vmclusters/vmcluster/backups/backup-vmcluster-"))
	g.Expect(b.ID).NotTo(BeEmpty())
	g.Expect(b.VMCluster).To(Equal("vmclusters/vmcluster"))
	g.Expect(b.VMClusterID).To(Equal(id))
	g.Expect(b.Target).To(Equal(backups.ObjectRef{Namespace: a.ns, Name: "vmcluster"}), "the VMCluster the chart names after the release")
	g.Expect(b.Phase).To(Equal("Pending"))
	g.Expect(b.Destination).To(Equal(backups.Destination{URL: "s3://o11y-backups/prod", CredentialsSecret: "backup-credentials", CredentialsSecretKey: "credentials"}))
	g.Expect(b.DeletionPolicy).To(Equal("Retain"))
	g.Expect(b.Concurrency).To(BeNil())
	g.Expect(b.InitiatedBy).To(Equal(caller))
	g.Expect(b.Replicas).To(BeEmpty())
	g.Expect(b.CreateTime).NotTo(BeEmpty())

	obj := a.object(shortName(b))
	g.Expect(string(obj.UID)).To(Equal(b.ID))
	g.Expect(obj.Spec).To(Equal(opsv1.ClusterBackupSpec{
		VMCluster: opsv1.VMClusterReference{Namespace: a.ns, Name: "vmcluster"},
		Destination: opsv1.BackupDestination{URL: "s3://o11y-backups/prod",
			CredentialsSecretRef: &opsv1.SecretKeyReference{Name: "backup-credentials", Key: "credentials"}},
		DeletionPolicy: opsv1.DeletionPolicyRetain,
	}))
	g.Expect(obj.Labels).To(HaveKeyWithValue(opsv1.LabelVMClusterID, id))
	g.Expect(obj.Labels).To(HaveKeyWithValue(vmclusters.LabelVMCluster, "vmcluster"))
	g.Expect(obj.Annotations).To(HaveKeyWithValue("ops.observability.tidbcloud.com/initiated-by", caller))

	// Read after write, from the cache, by name and by id; the vmcluster
	// by name or by id.
	for _, p := range []string{a.path("vmcluster", "/", shortName(b)), a.path(id, "/", b.ID)} {
		code, body := a.do(http.MethodGet, p, "", nil)
		g.Expect(code).To(Equal(http.StatusOK), "%s: %s", p, body)
		g.Expect(a.backup(body)).To(Equal(b))
	}

	// A second backup through the vmcluster's id: a different name.
	b2 := a.create(id, `{}`)
	g.Expect(b2.Name).NotTo(Equal(b.Name))
	g.Expect(a.count()).To(Equal(2))
}

func TestCreateWithRequestFields(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t, apiOptions{defaults: s3Defaults})
	a.vmcluster("prod")

	b := a.create("prod", `{"destination":{"url":"gs://other-bucket/eu","credentials_secret":"gcs-key"},"concurrency":4,"deletion_policy":"Delete"}`)
	spec := a.object(shortName(b)).Spec
	g.Expect(spec.Destination).To(Equal(opsv1.BackupDestination{URL: "gs://other-bucket/eu", CredentialsSecretRef: &opsv1.SecretKeyReference{Name: "gcs-key"}}),
		"the request's Secret, without the default key")
	g.Expect(spec.Concurrency).To(Equal(ptr.To[int32](4)))
	g.Expect(spec.DeletionPolicy).To(Equal(opsv1.DeletionPolicyDelete))
	g.Expect(b.Concurrency).To(Equal(ptr.To[int32](4)))
	g.Expect(b.DeletionPolicy).To(Equal("Delete"))

	b = a.create("prod", `{"destination":{"url":"s3://other/x","credentials_secret":""}}`)
	g.Expect(a.object(shortName(b)).Spec.Destination).To(Equal(opsv1.BackupDestination{URL: "s3://other/x"}), `"" is the ambient identity`)

	b = a.create("prod", `{"destination":{"url":"fs:///var/backups"}}`)
	g.Expect(a.object(shortName(b)).Spec.Destination).To(Equal(opsv1.BackupDestination{URL: "fs:///var/backups"}),
		"the default credentials are not used with fs://")
}

func TestInvalidRequestsCreateNothing(t *testing.T) {
	a := newAPI(t, apiOptions{defaults: config.BackupsConfig{Destination: "fs:///backups"}})
	a.vmcluster("vmcluster")
	tests := []struct {
		name, body string
		field      string
		desc       string
	}{
		{"http scheme", `{"destination":{"url":"http://bucket/x"}}`, "destination.url", "scheme must be s3://, gs://, azblob:// or fs://"},
		{"no bucket", `{"destination":{"url":"s3://"}}`, "destination.url", "must name a bucket"},
		{"relative fs path", `{"destination":{"url":"fs://backups"}}`, "destination.url", "absolute path"},
		{"query string", `{"destination":{"url":"s3://b/p?sig=abc"}}`, "destination.url", "query string"},
		{"credentials with fs (default URL)", `{"destination":{"credentials_secret":"creds"}}`, "destination.credentials_secret", "fs://"},
		{"concurrency", `{"concurrency":64}`, "concurrency", "between 1 and 32"},
		{"deletion policy", `{"deletion_policy":"Forever"}`, "deletion_policy", "Retain, Delete"},
		{"unknown field", `{"dst":"s3://b"}`, "dst", "unknown field"},
		{"malformed", `{"destination":`, "body", "malformed JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			code, body := a.do(http.MethodPost, a.path("vmcluster"), tt.body, nil)
			g.Expect(code).To(Equal(http.StatusBadRequest), string(body))
			reason, v := parseError(t, body)
			g.Expect(reason).To(Equal("INVALID_REQUEST"))
			g.Expect(v).To(HaveKeyWithValue(tt.field, ContainSubstring(tt.desc)))
			g.Expect(a.count()).To(BeZero())
		})
	}
	t.Run("long Idempotency-Key", func(t *testing.T) {
		g := NewWithT(t)
		code, body := a.do(http.MethodPost, a.path("vmcluster"), "", map[string]string{idempotency.Header: strings.Repeat("k", 256)})
		g.Expect(code).To(Equal(http.StatusBadRequest), string(body))
		_, v := parseError(t, body)
		g.Expect(v).To(HaveKey(idempotency.Header))
		g.Expect(a.count()).To(BeZero())
	})
}

func TestNoDestinationConfigured(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t, apiOptions{})
	a.vmcluster("vmcluster")
	code, body := a.do(http.MethodPost, a.path("vmcluster"), `{"concurrency":2}`, nil)
	g.Expect(code).To(Equal(http.StatusBadRequest), string(body))
	_, v := parseError(t, body)
	g.Expect(v).To(HaveKeyWithValue("destination.url", And(ContainSubstring("no default backup destination"), ContainSubstring("--backup-destination"))))
	g.Expect(a.count()).To(BeZero())

	// With one in the request it works.
	a.create("vmcluster", `{"destination":{"url":"azblob://container/path"}}`)
	g.Expect(a.count()).To(Equal(1))
}

// TestOtherNamespaceRefused: a backup may only target a VMCluster in its
// own namespace; with the backups namespace apart from the vmclusters',
// every request is refused and nothing is created.
func TestOtherNamespaceRefused(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t, apiOptions{defaults: s3Defaults, separateBackupNamespace: true})
	a.vmcluster("vmcluster")
	for _, body := range []string{"", `{"destination":{"credentials_secret":""}}`} {
		code, resp := a.do(http.MethodPost, a.path("vmcluster"), body, nil)
		g.Expect(code).To(Equal(http.StatusBadRequest), string(resp))
		reason, _ := parseError(t, resp)
		g.Expect(reason).To(Equal(backups.ReasonOtherNamespace))
		g.Expect(string(resp)).To(ContainSubstring("a backup may only target a vmcluster in its own namespace"))
	}
	g.Expect(a.count()).To(BeZero())
}

// TestFSRootsAndSecretLabel: an fs:// destination outside the configured
// roots, or a credentials Secret without the opt-in label, is a 400 on
// the field; an unlabelled Secret gets the answer of a missing one.
func TestFSRootsAndSecretLabel(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t, apiOptions{defaults: s3Defaults})
	a.vmcluster("vmcluster")
	g.Expect(env.Client.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.backupNS, Name: "plain"}})).To(Succeed())

	post := func(body string) (int, string, map[string]string) {
		code, resp := a.do(http.MethodPost, a.path("vmcluster"), body, nil)
		reason, v := parseError(t, resp)
		return code, reason, v
	}
	code, _, v := post(`{"destination":{"url":"fs:///etc"}}`)
	g.Expect(code).To(Equal(http.StatusBadRequest))
	g.Expect(v).To(HaveKeyWithValue("destination.url", "an fs:// destination must be inside one of the backup fs roots the administrator allowed: /backups, /var/backups"))
	code, _, v = post(`{"destination":{"url":"fs:///backups/../etc"}}`)
	g.Expect(code).To(Equal(http.StatusBadRequest))
	g.Expect(v).To(HaveKey("destination.url"))

	unlabelledCode, unlabelledResp := a.do(http.MethodPost, a.path("vmcluster"), `{"destination":{"credentials_secret":"plain"}}`, nil)
	g.Expect(unlabelledCode).To(Equal(http.StatusBadRequest))
	_, v = parseError(t, unlabelledResp)
	g.Expect(v).To(HaveKeyWithValue("destination.credentials_secret", ContainSubstring(`not found in namespace `+a.backupNS+`, or not labelled `+opsv1.BackupCredentialsLabel+`="true"`)))
	g.Expect(env.Client.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.backupNS, Name: "plain"}})).To(Succeed())
	missingCode, missingResp := a.do(http.MethodPost, a.path("vmcluster"), `{"destination":{"credentials_secret":"plain"}}`, nil)
	g.Expect(missingCode).To(Equal(unlabelledCode))
	g.Expect(withoutRequestID(missingResp)).To(Equal(withoutRequestID(unlabelledResp)), "an unlabelled Secret answers like a missing one")
	g.Expect(a.count()).To(BeZero())
}

var requestIDRE = regexp.MustCompile(`"requestId":"[^"]*"`)

// withoutRequestID is an error body without its (per request) request id.
func withoutRequestID(body []byte) string {
	return requestIDRE.ReplaceAllString(string(body), `"requestId":""`)
}

func TestNotFound(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t, apiOptions{defaults: s3Defaults})
	a.vmcluster("one")
	a.vmcluster("two")
	b := a.create("one", "")

	for _, c := range []struct{ method, path, reason string }{
		{http.MethodPost, a.path("missing"), vmclusters.ReasonNotFound},
		{http.MethodGet, a.path("missing"), vmclusters.ReasonNotFound},
		{http.MethodGet, a.path("missing", "/", shortName(b)), vmclusters.ReasonNotFound},
		{http.MethodDelete, a.path("missing", "/", shortName(b)), vmclusters.ReasonNotFound},
		{http.MethodPost, a.path("00000000-0000-0000-0000-000000000000"), vmclusters.ReasonNotFound},
		{http.MethodGet, a.path("one", "/backup-missing"), backups.ReasonNotFound},
		{http.MethodDelete, a.path("one", "/backup-missing"), backups.ReasonNotFound},
		{http.MethodGet, a.path("one", "/00000000-0000-0000-0000-000000000000"), backups.ReasonNotFound},
		// A backup of another vmcluster, by name and by id.
		{http.MethodGet, a.path("two", "/", shortName(b)), backups.ReasonNotFound},
		{http.MethodGet, a.path("two", "/", b.ID), backups.ReasonNotFound},
		{http.MethodDelete, a.path("two", "/", shortName(b)), backups.ReasonNotFound},
	} {
		code, body := a.do(c.method, c.path, "", nil)
		g.Expect(code).To(Equal(http.StatusNotFound), "%s %s: %s", c.method, c.path, body)
		reason, _ := parseError(t, body)
		g.Expect(reason).To(Equal(c.reason), "%s %s", c.method, c.path)
	}
	g.Expect(a.count()).To(Equal(1), "nothing created, nothing deleted")
	g.Expect(a.object(shortName(b)).DeletionTimestamp).To(BeNil())
}

func (a *api) list(vmcluster, query string) (int, backups.ListResponse, []byte) {
	a.t.Helper()
	code, body := a.do(http.MethodGet, a.path(vmcluster)+query, "", nil)
	var out backups.ListResponse
	if code == http.StatusOK {
		NewWithT(a.t).Expect(json.Unmarshal(body, &out)).To(Succeed())
	}
	return code, out, body
}

func TestListNewestFirstAcrossPages(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t, apiOptions{defaults: config.BackupsConfig{Destination: "fs:///backups"}})
	a.vmcluster("a")
	a.vmcluster("b")

	code, page, _ := a.list("a", "")
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(page.Backups).NotTo(BeNil())
	g.Expect(page.Backups).To(BeEmpty())

	var older []string
	for range 2 {
		older = append(older, shortName(a.create("a", "")))
	}
	// Creation times have a resolution of one second: let the clock move
	// on so the next backups are strictly newer.
	last := a.object(older[1]).CreationTimestamp.Unix()
	g.Eventually(func() int64 { return time.Now().Unix() }, 5*time.Second, 20*time.Millisecond).Should(BeNumerically(">", last))
	var newer []string
	for range 3 {
		newer = append(newer, shortName(a.create("a", "")))
	}
	a.create("b", "")

	// The expected order from the objects' own creation times: newest
	// second first, then by name.
	var objs []*opsv1.ClusterBackup
	for _, n := range append(append([]string{}, older...), newer...) {
		objs = append(objs, a.object(n))
	}
	sort.Slice(objs, func(i, j int) bool {
		ti, tj := objs[i].CreationTimestamp.Unix(), objs[j].CreationTimestamp.Unix()
		return ti > tj || ti == tj && objs[i].Name < objs[j].Name
	})
	var want []string
	for _, o := range objs {
		want = append(want, o.Name)
	}

	var got []string
	query := "?page_size=2"
	var pages int
	for {
		code, page, body := a.list("a", query)
		g.Expect(code).To(Equal(http.StatusOK), string(body))
		pages++
		g.Expect(len(page.Backups)).To(BeNumerically("<=", 2))
		for _, b := range page.Backups {
			g.Expect(b.VMCluster).To(Equal("vmclusters/a"))
			got = append(got, shortName(b))
		}
		if page.NextPageToken == "" {
			break
		}
		g.Expect(pages).To(BeNumerically("<", 5), "pagination ends")
		query = "?page_size=2&page_token=" + url.QueryEscape(page.NextPageToken)
	}
	g.Expect(pages).To(Equal(3))
	g.Expect(got).To(Equal(want), "newest first, then by name; no gap, no repeat")
	g.Expect(got[:3]).To(ConsistOf(newer), "the backups created a second later come first")
	g.Expect(got[3:]).To(ConsistOf(older))

	code, page, _ = a.list("b", "")
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(page.Backups).To(HaveLen(1))
	g.Expect(page.NextPageToken).To(BeEmpty())

	// A token is only good for the vmcluster it was issued for.
	_, first, _ := a.list("a", "?page_size=1")
	g.Expect(first.NextPageToken).NotTo(BeEmpty())
	code, _, body := a.list("b", "?page_token="+url.QueryEscape(first.NextPageToken))
	g.Expect(code).To(Equal(http.StatusBadRequest), string(body))
	_, v := parseError(t, body)
	g.Expect(v).To(HaveKey("page_token"))

	code, _, body = a.list("a", "?page_size=5000")
	g.Expect(code).To(Equal(http.StatusBadRequest), string(body))
	code, _, _ = a.list("missing", "")
	g.Expect(code).To(Equal(http.StatusNotFound))
}

func TestGetShowsReplicaStatus(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t, apiOptions{defaults: config.BackupsConfig{Destination: "fs:///backups"}})
	a.vmcluster("vmcluster")
	b := a.create("vmcluster", `{"concurrency":1}`)
	name := shortName(b)

	// What ops-operator writes, through the status subresource.
	start := metav1.NewTime(time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC))
	done := metav1.NewTime(start.Add(90 * time.Second))
	obj := a.object(name)
	dest := "fs:///backups/vmcluster/" + name + "/"
	obj.Status = opsv1.ClusterBackupStatus{
		ObservedGeneration: obj.Generation,
		Phase:              opsv1.BackupPhaseRunning,
		Progress:           "1/2",
		StartTime:          &start,
		Conditions: []metav1.Condition{{Type: opsv1.ReadyCondition, Status: metav1.ConditionFalse, Reason: "Progressing",
			Message: "Backing up 2 vmstorage replicas", LastTransitionTime: start}},
		Replicas: []opsv1.ReplicaBackup{
			{Pod: "vmstorage-vmcluster-0", PodUID: "p0", Node: "node-a", Endpoint: "http://10.0.0.1:8482", Destination: dest + "vmstorage-vmcluster-0",
				SnapshotName: "20260506120000-17C4A1B2C3D4E5F6", State: opsv1.ReplicaStateSucceeded, JobName: "j0", Bytes: 49512,
				StartTime: &start, CompletionTime: &done},
			{Pod: "vmstorage-vmcluster-1", PodUID: "p1", Node: "node-b", Destination: dest + "vmstorage-vmcluster-1",
				SnapshotName: "20260506120000-17C4A1B2C3D4E5F7", State: opsv1.ReplicaStateUploading, JobName: "j1", StartTime: &start},
		},
	}
	g.Expect(env.Client.Status().Update(context.Background(), obj)).To(Succeed())

	g.Eventually(func(g Gomega) {
		code, body := a.do(http.MethodGet, a.path("vmcluster", "/", name), "", nil)
		g.Expect(code).To(Equal(http.StatusOK), string(body))
		got := a.backup(body)
		g.Expect(got.Phase).To(Equal("Running"))
		g.Expect(got.Progress).To(Equal("1/2"))
		g.Expect(got.Message).To(Equal("Backing up 2 vmstorage replicas"))
		g.Expect(got.StartTime).To(Equal("2026-05-06T12:00:00Z"))
		g.Expect(got.CompletionTime).To(BeEmpty())
		g.Expect(got.Replicas).To(Equal([]backups.Replica{
			{Pod: "vmstorage-vmcluster-0", Node: "node-a", Snapshot: "20260506120000-17C4A1B2C3D4E5F6", Destination: dest + "vmstorage-vmcluster-0",
				Phase: "Succeeded", Bytes: 49512, StartTime: "2026-05-06T12:00:00Z", CompletionTime: "2026-05-06T12:01:30Z"},
			{Pod: "vmstorage-vmcluster-1", Node: "node-b", Snapshot: "20260506120000-17C4A1B2C3D4E5F7", Destination: dest + "vmstorage-vmcluster-1",
				Phase: "Uploading", StartTime: "2026-05-06T12:00:00Z"},
		}))
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())

	// The list shows the same.
	_, page, _ := a.list("vmcluster", "")
	g.Expect(page.Backups).To(HaveLen(1))
	g.Expect(page.Backups[0].Replicas).To(HaveLen(2))
	g.Expect(page.Backups[0].Progress).To(Equal("1/2"))
}

func TestDelete(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t, apiOptions{defaults: config.BackupsConfig{Destination: "fs:///backups"}})
	a.vmcluster("vmcluster")
	ctx := context.Background()

	t.Run("no finalizer: gone at once", func(t *testing.T) {
		g := NewWithT(t)
		b := a.create("vmcluster", "")
		code, body := a.do(http.MethodDelete, a.path("vmcluster", "/", b.ID), "", nil)
		g.Expect(code).To(Equal(http.StatusOK), string(body))
		var out backups.DeleteResponse
		g.Expect(json.Unmarshal(body, &out)).To(Succeed())
		g.Expect(out).To(Equal(backups.DeleteResponse{ID: b.ID, Name: b.Name, Result: backups.ResultDeleted}))
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: a.backupNS, Name: shortName(b)}, &opsv1.ClusterBackup{})
		g.Expect(err).To(MatchError(ContainSubstring("not found")))
		code, _ = a.do(http.MethodGet, a.path("vmcluster", "/", shortName(b)), "", nil)
		g.Expect(code).To(Equal(http.StatusNotFound), "the cache caught up before the answer")
	})

	t.Run("the operator's finalizer: deleting until it is done", func(t *testing.T) {
		g := NewWithT(t)
		b := a.create("vmcluster", "")
		obj := a.object(shortName(b))
		const finalizer = "ops.observability.tidbcloud.com/test-hold"
		patch := client.MergeFrom(obj.DeepCopy())
		obj.Finalizers = append(obj.Finalizers, finalizer)
		g.Expect(env.Client.Patch(ctx, obj, patch)).To(Succeed())

		for range 2 { // a repeat is accepted again
			code, body := a.do(http.MethodDelete, a.path("vmcluster", "/", shortName(b)), "", nil)
			g.Expect(code).To(Equal(http.StatusAccepted), string(body))
			var out backups.DeleteResponse
			g.Expect(json.Unmarshal(body, &out)).To(Succeed())
			g.Expect(out.Result).To(Equal(backups.ResultDeleting))
			g.Expect(out.ID).To(Equal(b.ID))
			g.Expect(out.Backup).NotTo(BeNil())
			g.Expect(out.Backup.Deleting).To(BeTrue())
		}
		code, body := a.do(http.MethodGet, a.path("vmcluster", "/", shortName(b)), "", nil)
		g.Expect(code).To(Equal(http.StatusOK), string(body))
		g.Expect(a.backup(body).Deleting).To(BeTrue())
		g.Expect(a.object(shortName(b)).DeletionTimestamp).NotTo(BeNil())

		obj = a.object(shortName(b))
		patch = client.MergeFrom(obj.DeepCopy())
		obj.Finalizers = nil
		g.Expect(env.Client.Patch(ctx, obj, patch)).To(Succeed())
		g.Eventually(func() int {
			code, _ := a.do(http.MethodGet, a.path("vmcluster", "/", shortName(b)), "", nil)
			return code
		}, 10*time.Second, 50*time.Millisecond).Should(Equal(http.StatusNotFound))
	})
	g.Expect(a.count()).To(BeZero())
}

func TestIdempotencyKey(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t, apiOptions{defaults: config.BackupsConfig{Destination: "fs:///backups"}})
	a.vmcluster("vmcluster")
	a.vmcluster("other")
	key := map[string]string{idempotency.Header: "nightly-2026-05-06"}

	code, body := a.do(http.MethodPost, a.path("vmcluster"), `{"concurrency":2}`, key)
	g.Expect(code).To(Equal(http.StatusAccepted), string(body))
	first := a.backup(body)
	g.Expect(a.object(shortName(first)).Annotations).To(HaveKeyWithValue("ops.observability.tidbcloud.com/idempotency-key", "nightly-2026-05-06"))

	code, body = a.do(http.MethodPost, a.path("vmcluster"), `{"concurrency":2}`, key)
	g.Expect(code).To(Equal(http.StatusOK), string(body))
	g.Expect(a.backup(body).ID).To(Equal(first.ID), "the retry returns the backup the first attempt created")

	for _, c := range []struct{ vmcluster, body string }{
		{"vmcluster", `{"concurrency":3}`},
		{"other", `{"concurrency":2}`},
	} {
		code, body = a.do(http.MethodPost, a.path(c.vmcluster), c.body, key)
		g.Expect(code).To(Equal(http.StatusConflict), string(body))
		reason, _ := parseError(t, body)
		g.Expect(reason).To(Equal("ALREADY_EXISTS"))
	}
	g.Expect(a.count()).To(Equal(1))
}
