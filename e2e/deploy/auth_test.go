package deploy

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/deploy/render"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// apiPermissionGroup is the API group of the REST API's permissions
// (apiserver/internal/auth.Group): no CRD serves it.
const apiPermissionGroup = "api.ops.observability.tidbcloud.com"

// TestAPIAccessRolesGrantNothingOnCustomResources: the REST permissions
// and the custom resources' RBAC are separate. A ServiceAccount bound to
// any of the chart's API-access roles cannot touch ClusterBackups or
// ClusterUpgradeOperations through the Kubernetes API, and no role of the
// chart names the API group of the custom resources for a REST resource.
func TestAPIAccessRolesGrantNothingOnCustomResources(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	in := install(t, nil)

	for _, role := range []string{"viewer", "operator", "admin"} {
		cr := find(t, in.res.Objects, "ClusterRole", in.fullname+"-api-"+role)
		rules, _, _ := unstructured.NestedSlice(cr.Object, "rules")
		g.Expect(rules).NotTo(BeEmpty())
		for _, r := range rules {
			groups, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "apiGroups")
			g.Expect(groups).To(Equal([]string{apiPermissionGroup}), "%s rule %v", cr.GetName(), r)
		}

		sa := "rest-" + role
		g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: in.ns}})).To(Succeed())
		g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: in.ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.GetName()},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: in.ns}},
		})).To(Succeed())
		c := clientAs(t, in.ns, sa)
		g.Eventually(func(g Gomega) {
			// The binding is in effect for the REST group...
			sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
				User: "system:serviceaccount:" + in.ns + ":" + sa, Groups: []string{"system:serviceaccounts", "system:authenticated"},
				ResourceAttributes: &authzv1.ResourceAttributes{Group: apiPermissionGroup, Resource: "clusterbackups", Verb: "get", Namespace: in.ns},
			}}
			g.Expect(env.Client.Create(ctx, sar)).To(Succeed())
			g.Expect(sar.Status.Allowed).To(BeTrue())
		}, timeout).Should(Succeed())
		// ...and grants nothing on the custom resources.
		backup := &opsv1.ClusterBackup{
			ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: in.ns},
			Spec:       opsv1.ClusterBackupSpec{VMCluster: opsv1.VMClusterReference{Name: "vm1"}, Destination: opsv1.BackupDestination{URL: "s3://bucket/x"}},
		}
		forbidden(g, c.Create(ctx, backup, client.DryRunAll), role+": create clusterbackup")
		forbidden(g, c.List(ctx, &opsv1.ClusterBackupList{}, client.InNamespace(in.ns)), role+": list clusterbackups")
		forbidden(g, c.Delete(ctx, backup), role+": delete clusterbackup")
		cuo := &opsv1.ClusterUpgradeOperation{
			ObjectMeta: metav1.ObjectMeta{Name: "u1", Namespace: in.ns},
			Spec:       opsv1.ClusterUpgradeOperationSpec{K8sClusterName: "c1", Region: "local", CloudProvider: "mock", TargetVersion: "1.30"},
		}
		forbidden(g, c.Create(ctx, cuo, client.DryRunAll), role+": create clusterupgradeoperation")
		forbidden(g, c.List(ctx, &opsv1.ClusterUpgradeOperationList{}, client.InNamespace(in.ns)), role+": list clusterupgradeoperations")
	}
}

// TestChartTLSAndAudiences: the chart asks for tokens minted for the
// ops-server audience by default; with apiserver.tls enabled it mounts the
// Secret, points the configuration at it, probes over HTTPS and scrapes
// over HTTPS verified with the Secret's CA; the result passes a
// server-side dry-run.
func TestChartTLSAndAudiences(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	res := renderChart(t, "ops-server", "observability", nil)
	auth := apiserverConfig(t, res)["auth"].(map[string]any)
	g.Expect(auth["tokenAudiences"]).To(Equal([]any{"ops-server"}))
	g.Expect(apiserverConfig(t, res)).NotTo(HaveKey("tls"))
	pod := toDeployment(t, find(t, res.Objects, "Deployment", "ops-server")).Spec.Template.Spec
	api := container(t, pod, "ops-apiserver")
	for _, p := range []*corev1.Probe{api.LivenessProbe, api.ReadinessProbe, api.StartupProbe} {
		g.Expect(p.HTTPGet.Scheme).To(Equal(corev1.URISchemeHTTP))
	}

	ns := env.NewNamespace(t)
	values := map[string]any{
		"apiserver": map[string]any{"tls": map[string]any{"enabled": true, "secretName": "ops-server-tls"}},
		"metrics":   map[string]any{"serviceMonitor": map[string]any{"enabled": true}},
	}
	res = renderChart(t, "ops-server", ns, values)
	cfg := apiserverConfig(t, res)
	g.Expect(cfg["tls"]).To(Equal(map[string]any{"certFile": "/etc/ops-server/tls/tls.crt", "privateKeyFile": "/etc/ops-server/tls/tls.key"}))
	pod = toDeployment(t, find(t, res.Objects, "Deployment", "ops-server")).Spec.Template.Spec
	api = container(t, pod, "ops-apiserver")
	for _, p := range []*corev1.Probe{api.LivenessProbe, api.ReadinessProbe, api.StartupProbe} {
		g.Expect(p.HTTPGet.Scheme).To(Equal(corev1.URISchemeHTTPS))
	}
	g.Expect(api.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "apiserver-tls", MountPath: "/etc/ops-server/tls", ReadOnly: true}))
	var secretVolume *corev1.Volume
	for i, v := range pod.Volumes {
		if v.Name == "apiserver-tls" {
			secretVolume = &pod.Volumes[i]
		}
	}
	g.Expect(secretVolume).NotTo(BeNil())
	g.Expect(secretVolume.Secret.SecretName).To(Equal("ops-server-tls"))

	sm := find(t, res.Objects, "ServiceMonitor", "ops-server")
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	var apiEndpoint map[string]any
	for _, e := range endpoints {
		if e.(map[string]any)["port"] == "http" {
			apiEndpoint = e.(map[string]any)
		}
	}
	g.Expect(apiEndpoint).To(HaveKeyWithValue("scheme", "https"))
	serverName, _, _ := unstructured.NestedString(apiEndpoint, "tlsConfig", "serverName")
	g.Expect(serverName).To(Equal("ops-server." + ns + ".svc"))

	// The TLS rendering is accepted by the API server.
	for _, obj := range res.Objects {
		g.Expect(apply(ctx, obj, true)).To(Succeed(), describe(obj))
	}

	// TLS without a Secret is refused by the schema.
	_, err := render.Render(render.Options{ChartDir: chartDir(), ReleaseName: "ops-server", Namespace: "observability",
		Values: map[string]any{"apiserver": map[string]any{"tls": map[string]any{"enabled": true}}}})
	g.Expect(err).To(HaveOccurred())
	g.Expect(strings.ToLower(err.Error())).To(ContainSubstring("secretname"))
}
