// Package buildinfo says which build of ops-server runs: the version set
// at link time (-ldflags "-X .../buildinfo.Version=v1.2.3"; "dev"
// otherwise), the VCS revision Go stamped into the binary, and the Go
// version; both binaries export them as ops_build_info.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Version is set at link time; "dev" for a plain go build.
var Version = "dev"

// Revision is the VCS revision, set at link time or read from the build
// information Go stamps into binaries built from a checkout; "unknown"
// when neither says.
var Revision = ""

// Info is what ops_build_info reports.
type Info struct {
	Version, Revision, GoVersion string
}

// Get returns the build information of the running binary.
func Get() Info {
	rev := Revision
	if rev == "" {
		rev = "unknown"
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" && s.Value != "" {
					rev = s.Value
				}
			}
		}
	}
	return Info{Version: Version, Revision: rev, GoVersion: runtime.Version()}
}

// String is what --version prints: "<binary> <version> (revision <rev>, <go version>)".
func (i Info) String() string {
	return fmt.Sprintf("%s (revision %s, %s)", i.Version, i.Revision, i.GoVersion)
}

// Collector is the ops_build_info gauge: always 1, the build in its
// labels, the way Prometheus' own *_build_info metrics are.
func Collector() prometheus.Collector {
	i := Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "ops_build_info",
		Help:        "A metric with a constant '1' value labelled by the version, VCS revision and Go version ops-server was built from.",
		ConstLabels: prometheus.Labels{"version": i.Version, "revision": i.Revision, "goversion": i.GoVersion},
	})
	g.Set(1)
	return g
}
