// Package testenv starts a real Kubernetes control plane (etcd and
// kube-apiserver, the binaries envtest uses, built by `make tools` into bin/)
// with every CRD in crds/ installed, and optionally the real Flux
// source-controller and helm-controller as child processes against it.
//
// It is shared by the integration tests of every module. It never skips: a
// missing binary is an error that names `make tools`.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
)

// Options configure Start.
type Options struct {
	// AddToScheme registers further types (for example our own API group)
	// with the environment's scheme.
	AddToScheme []func(*runtime.Scheme) error
	// ExtraCRDDirs are installed after crds/.
	ExtraCRDDirs []string
	// OmitCRDs are files of crds/ not installed (the local stack leaves
	// out the VictoriaMetrics CRDs: the vm-operator chart installs them).
	OmitCRDs []string
	// EtcdDataDir keeps etcd's data in a directory that outlives the
	// environment (the local stack's state); empty: a temporary directory.
	EtcdDataDir string
	// APIServerFlags are further kube-apiserver flags, name (without
	// dashes) to value; the local stack sets how it reaches kwok's kubelet
	// endpoints.
	APIServerFlags map[string]string
}

// Environment is a running control plane.
type Environment struct {
	// Config is an admin (system:masters) client configuration.
	Config *rest.Config
	// Client is an uncached controller-runtime client with Scheme.
	Client client.Client
	// Scheme knows the core types, CRDs, Flux and whatever Options added.
	Scheme *runtime.Scheme
	// KubeconfigPath is an admin kubeconfig on disk, for child processes.
	KubeconfigPath string
	// Dir is a scratch directory removed by Stop.
	Dir string

	env *envtest.Environment
}

// NewScheme returns a scheme with the built-in types, apiextensions and the
// Flux kinds ops-server uses.
func NewScheme(extra ...func(*runtime.Scheme) error) (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	adders := append([]func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		helmv2.AddToScheme,
		sourcev1.AddToScheme,
	}, extra...)
	for _, add := range adders {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Start starts etcd and kube-apiserver (from $KUBEBUILDER_ASSETS when set,
// otherwise from bin/; see Binary) and installs crds/.
func Start(opts Options) (*Environment, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	apiserverPath, err := Binary("kube-apiserver")
	if err != nil {
		return nil, err
	}
	etcdPath, err := Binary("etcd")
	if err != nil {
		return nil, err
	}
	scheme, err := NewScheme(opts.AddToScheme...)
	if err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	dir, err := os.MkdirTemp("", "ops-testenv-")
	if err != nil {
		return nil, err
	}

	crdDir := filepath.Join(root, "crds")
	if len(opts.OmitCRDs) > 0 {
		if crdDir, err = crdsWithout(crdDir, filepath.Join(dir, "crds"), opts.OmitCRDs); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	env := &envtest.Environment{
		Scheme:                   scheme,
		CRDDirectoryPaths:        append([]string{crdDir}, opts.ExtraCRDDirs...),
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
		// On a busy machine the CRDs take longer than envtest's default 10 s.
		CRDInstallOptions: envtest.CRDInstallOptions{MaxTime: time.Minute},
	}
	// envtest waits 10 s by default for the CRDs to be served; the local
	// stack installs over a hundred, maybe on a loaded machine.
	env.CRDInstallOptions.MaxTime, env.CRDInstallOptions.PollInterval = 2*time.Minute, time.Second
	env.ControlPlane.GetAPIServer().Path = apiserverPath
	for name, value := range opts.APIServerFlags {
		env.ControlPlane.GetAPIServer().Configure().Set(name, value)
	}
	// etcd's and kube-apiserver's ports come from FreePort, not envtest's
	// own choice in the ephemeral range, where an outgoing connection of
	// a test running in parallel can take a port before its server binds.
	var ports [3]int
	for i := range ports {
		if ports[i], err = FreePort(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	env.ControlPlane.Etcd = &envtest.Etcd{
		Path: etcdPath, DataDir: opts.EtcdDataDir,
		URL: &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))},
	}
	env.ControlPlane.Etcd.Configure().Set("listen-peer-urls", "http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1])))
	env.ControlPlane.GetAPIServer().SecurePort = ports[2]
	// kubectl is only used by tests that ask for it; point at it anyway.
	if kubectl, err := Binary("kubectl"); err == nil {
		env.ControlPlane.KubectlPath = kubectl
	} else {
		env.ControlPlane.KubectlPath = filepath.Join(mustBinDir(), "kubectl")
	}

	cfg, err := env.Start()
	if err != nil {
		// envtest leaves etcd and kube-apiserver running when a later step
		// (installing the CRDs) fails.
		_ = env.Stop()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s and %s: %w", apiserverPath, etcdPath, err)
	}
	e := &Environment{Config: cfg, Scheme: scheme, Dir: dir, env: env}
	if e.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		_ = e.Stop()
		return nil, err
	}
	admin, err := env.AddUser(envtest.User{Name: "testenv-admin", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		_ = e.Stop()
		return nil, fmt.Errorf("adding admin user: %w", err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		_ = e.Stop()
		return nil, err
	}
	e.KubeconfigPath = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(e.KubeconfigPath, kubeconfig, 0o600); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

// CertDir is the kube-apiserver's certificate directory (serving
// certificate, service-account signing key sa-signer.key).
func (e *Environment) CertDir() string { return e.env.ControlPlane.APIServer.CertDir }

// Stop stops the control plane and removes the scratch directory.
func (e *Environment) Stop() error {
	var errs []error
	if e.env != nil {
		errs = append(errs, e.env.Stop())
	}
	errs = append(errs, os.RemoveAll(e.Dir))
	return errors.Join(errs...)
}

// CreateNamespace creates a namespace with a generated name from prefix, so
// that every test works in a namespace of its own.
func (e *Environment) CreateNamespace(ctx context.Context, prefix string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := e.Client.Create(ctx, ns); err != nil {
		return "", fmt.Errorf("creating namespace: %w", err)
	}
	return ns.Name, nil
}

// TB is the part of testing.TB that NewNamespace needs.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
	Name() string
}

// NewNamespace creates a namespace for one test and deletes it afterwards.
func (e *Environment) NewNamespace(t TB) string {
	t.Helper()
	ns, err := e.CreateNamespace(context.Background(), "t")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		_ = e.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	return ns
}

func init() {
	// Tests share one scheme per environment; make sure the global one used
	// by envtest's CRD installer knows apiextensions.
	utilruntime.Must(apiextensionsv1.AddToScheme(clientgoscheme.Scheme))
}

// crdsWithout copies the CRD files of src into dst, except omit (file
// names), and returns dst.
func crdsWithout(src, dst string, omit []string) (string, error) {
	entries, err := os.ReadDir(src)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.IsDir() || slices.Contains(omit, e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return "", err
		}
	}
	return dst, nil
}
