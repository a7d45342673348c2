package buildinfo_test

import (
	"runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tidbcloud/ops-server/operator/pkg/buildinfo"
)

func TestCollector(t *testing.T) {
	g := NewWithT(t)
	i := buildinfo.Get()
	g.Expect(i.Version).To(Equal("dev"), "the default without ldflags")
	g.Expect(i.Revision).NotTo(BeEmpty())
	want := `# HELP ops_build_info A metric with a constant '1' value labelled by the version, VCS revision and Go version ops-server was built from.
# TYPE ops_build_info gauge
ops_build_info{goversion="` + runtime.Version() + `",revision="` + i.Revision + `",version="dev"} 1
`
	g.Expect(testutil.CollectAndCompare(buildinfo.Collector(), strings.NewReader(want))).To(Succeed())
}

func TestString(t *testing.T) {
	g := NewWithT(t)
	i := buildinfo.Info{Version: "v1.2.3", Revision: "abc", GoVersion: "go1.26.0"}
	g.Expect(i.String()).To(Equal("v1.2.3 (revision abc, go1.26.0)"))
}
