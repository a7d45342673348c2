package testenv_test

import (
	"os/exec"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/operator/testenv"
)

// A process started through Isolated sees its own hostname and, with a
// namespace, the in-cluster namespace file; the pid is the wrapped
// program's own (the wrapper execs it).
func TestIsolatedHostnameNamespaceAndPid(t *testing.T) {
	g := NewWithT(t)
	w := testenv.Isolated("flux-1", "observability")
	cmd := exec.Command(w[0], append(w[1:], "/bin/sh", "-c", `cat /proc/sys/kernel/hostname; cat `+testenv.InClusterNamespaceFile+`; echo; echo $$`)...)
	out, err := cmd.Output()
	g.Expect(err).NotTo(HaveOccurred(), "%s", out)
	g.Expect(string(out)).To(Equal("flux-1\nobservability\n" + strconv.Itoa(cmd.Process.Pid) + "\n"))

	w = testenv.Isolated("ops-operator-0", "")
	cmd = exec.Command(w[0], append(w[1:], "/bin/sh", "-c", `cat /proc/sys/kernel/hostname; test -e `+testenv.InClusterNamespaceFile+` && echo namespace file`)...)
	out, _ = cmd.Output()
	g.Expect(string(out)).To(Equal("ops-operator-0\n"), "no mount namespace, no namespace file without a namespace")
}
