package bench

import (
	"debug/buildinfo"
	"os"
	"path/filepath"
	"runtime"
)

// Machine describes where the benchmark ran.
type Machine struct {
	CPUs      int     `json:"cpus"`
	CPUModel  string  `json:"cpuModel,omitempty"`
	MemoryGiB float64 `json:"memoryGiB"`
	OS        string  `json:"os"`
	// GoVersion is the toolchain ops-bench (and, by `make bench`, the
	// ops-server binaries) was built with.
	GoVersion string `json:"goVersion"`
	// Versions of the components, as built into bin/ (module versions
	// from the binaries' build information; Kubernetes from its /version).
	Kubernetes     string `json:"kubernetes"`
	SourceCtrl     string `json:"sourceController"`
	HelmCtrl       string `json:"helmController"`
	VMOperator     string `json:"vmOperator"`
	Etcd           string `json:"etcd"`
	Kwok           string `json:"kwok"`
	OpsServerBuild string `json:"opsServerBuild,omitempty"`
}

// DescribeMachine reads the machine and the versions of the binaries in
// binDir. kubeVersion is kube-apiserver's own answer.
func DescribeMachine(binDir, kubeVersion string) Machine {
	m := Machine{
		CPUs:       runtime.NumCPU(),
		CPUModel:   CPUModel(),
		OS:         runtime.GOOS + "/" + runtime.GOARCH,
		GoVersion:  runtime.Version(),
		Kubernetes: kubeVersion,
	}
	if total, err := MemTotal(); err == nil {
		m.MemoryGiB = float64(total) / (1 << 30)
	}
	m.SourceCtrl = ModuleVersion(filepath.Join(binDir, "source-controller"), "github.com/fluxcd/source-controller")
	m.HelmCtrl = ModuleVersion(filepath.Join(binDir, "helm-controller"), "github.com/fluxcd/helm-controller")
	m.VMOperator = ModuleVersion(filepath.Join(binDir, "vm-operator"), "github.com/VictoriaMetrics/operator")
	m.Etcd = ModuleVersion(filepath.Join(binDir, "etcd"), "go.etcd.io/etcd/server/v3")
	m.Kwok = ModuleVersion(filepath.Join(binDir, "kwok"), "sigs.k8s.io/kwok")
	if info, err := buildinfo.ReadFile(filepath.Join(binDir, "ops-apiserver")); err == nil {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				m.OpsServerBuild = s.Value[:12]
			}
		}
	}
	return m
}

// ModuleVersion returns the version of module built into the Go binary at
// path: the main module's or a dependency's ("unknown" when absent).
func ModuleVersion(path, module string) string {
	if _, err := os.Stat(path); err != nil {
		return "unknown"
	}
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	if info.Main.Path == module && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	for _, d := range info.Deps {
		if d.Path == module {
			if d.Replace != nil && d.Replace.Version != "" {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "unknown"
}
