// Package deploy tests the deployment artefacts: the Helm chart
// deploy/charts/ops-server (rendered with the Helm SDK and applied to a real
// kube-apiserver), its RBAC (exercised by clients impersonating the chart's
// ServiceAccounts, and by the real Flux controllers running as the ops-server
// ServiceAccount), the generated kustomize base, the Dockerfile and the
// Tiltfile.
package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/testenv"

	"github.com/tidbcloud/ops-server/e2e/deploy/render"
)

var (
	env  *testenv.Environment
	root string
)

// serviceMonitorCRD stands in for the Prometheus operator's CRD, which is
// not available here: it lets the ServiceMonitor be applied; its fields are
// checked by TestServiceMonitor.
const serviceMonitorCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              x-kubernetes-preserve-unknown-fields: true
`

// prometheusRuleCRD stands in for the Prometheus operator's PrometheusRule
// CRD like serviceMonitorCRD; the VMRule CRD is the vm-operator chart's
// (deploy/charts/vm-operator/crds). The rules themselves are evaluated by
// package rules.
const prometheusRuleCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: prometheusrules.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: PrometheusRule, listKind: PrometheusRuleList, plural: prometheusrules, singular: prometheusrule}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              x-kubernetes-preserve-unknown-fields: true
`

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if root, err = render.RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	extra, err := os.MkdirTemp("", "deploy-crds-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(extra)
	if err := os.WriteFile(filepath.Join(extra, "servicemonitors.yaml"), []byte(serviceMonitorCRD), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := os.WriteFile(filepath.Join(extra, "prometheusrules.yaml"), []byte(prometheusRuleCRD), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	vmrules, err := os.ReadFile(filepath.Join(root, "deploy", "charts", "vm-operator", "crds", "vmrules.operator.victoriametrics.com.yaml"))
	if err == nil {
		err = os.WriteFile(filepath.Join(extra, "vmrules.yaml"), vmrules, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, err = testenv.Start(testenv.Options{
		AddToScheme:  []func(*runtime.Scheme) error{opsv1.AddToScheme},
		ExtraCRDDirs: []string{extra},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the test control plane (run `make tools` first): %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	return m.Run()
}

// chartDir is the ops-server chart.
func chartDir() string { return filepath.Join(root, "deploy", "charts", "ops-server") }

// exampleValues returns the example values files of the chart, by name.
func exampleValues(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir(), "examples", "*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("expected example values files under %s/examples, found %v (%v)", chartDir(), files, err)
	}
	out := map[string]string{}
	for _, f := range files {
		out[filepath.Base(f)] = f
	}
	return out
}

// renderChart renders the chart for a release in namespace, failing the
// test on error.
func renderChart(t *testing.T, release, namespace string, values map[string]any, files ...string) *render.Result {
	t.Helper()
	res, err := render.Render(render.Options{ChartDir: chartDir(), ReleaseName: release, Namespace: namespace, ValuesFiles: files, Values: values})
	if err != nil {
		t.Fatalf("rendering the chart: %v", err)
	}
	return res
}

// ensureNamespace creates a namespace unless it exists (namespaces named by
// values files, shared between tests).
func ensureNamespace(ctx context.Context, name string) error {
	err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// apply server-side applies obj with the admin client; dryRun keeps it from
// being persisted (the API server still validates and admits it fully).
func apply(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) error {
	opts := []client.ApplyOption{client.FieldOwner("e2e-deploy"), client.ForceOwnership}
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	return env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), opts...)
}

// describe names an object in messages.
func describe(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + " " + u.GetName()
	}
	return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
}

// find returns the rendered object of kind and name, failing when absent.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("rendered chart has no %s %s", kind, name)
	return nil
}

// applyPolicy renders the chart as release in ns and applies its
// ValidatingAdmissionPolicy "<release>-<policy>" and the binding of that
// name until the test ends; it returns the name. A release name of its
// own keeps the cluster-scoped policy from colliding with other tests'.
func applyPolicy(t *testing.T, release, ns, policy string) string {
	t.Helper()
	res := renderChart(t, release, ns, nil)
	name := release + "-" + policy
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		obj := find(t, res.Objects, kind, name)
		if err := apply(context.Background(), obj, false); err != nil {
			t.Fatalf("applying %s %s: %v", kind, name, err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	return name
}

// impersonate returns a client configuration acting as the ServiceAccount
// namespace/name (and its groups), as a Pod running with it would.
func impersonate(namespace, name string) *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	return cfg
}

// timeout is the bound of every wait in this package.
const timeout = 90 * time.Second
