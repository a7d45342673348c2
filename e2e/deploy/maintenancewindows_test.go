package deploy

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/operator/pkg/maintenancewindows"
)

// TestMaintenanceWindowsValues: operator.maintenanceWindows renders a
// ConfigMap that ops-operator's own parser accepts, mounted where
// --maintenance-windows reads it; without the value there is neither.
func TestMaintenanceWindowsValues(t *testing.T) {
	g := NewWithT(t)
	res := renderChart(t, "ops-server", "observability", map[string]any{"operator": map[string]any{"maintenanceWindows": []any{
		map[string]any{"cloudProvider": "eks", "region": "us-west-2",
			"window": map[string]any{"days": []any{"Saturday", "Sunday"}, "start": "02:00", "duration": "4h", "timeZone": "America/Los_Angeles"}},
	}}})
	cm := find(t, res.Objects, "ConfigMap", "ops-server-maintenance-windows")
	d, err := maintenancewindows.Parse([]byte(nestedString(cm, "data", "windows.yaml")))
	g.Expect(err).NotTo(HaveOccurred())
	w := d.For("eks", "us-west-2", "prod")
	g.Expect(w).NotTo(BeNil())
	g.Expect(w.TimeZone).To(Equal("America/Los_Angeles"))

	pod := toDeployment(t, find(t, res.Objects, "Deployment", "ops-server-operator")).Spec.Template.Spec
	c := pod.Containers[0]
	g.Expect(c.Args).To(ContainElement("--maintenance-windows=/etc/ops-server/maintenance-windows/windows.yaml"))
	var mounted bool
	for _, m := range c.VolumeMounts {
		if m.Name == "maintenance-windows" && m.MountPath == "/etc/ops-server/maintenance-windows" {
			mounted = true
		}
	}
	g.Expect(mounted).To(BeTrue())
	var fromCM bool
	for _, v := range pod.Volumes {
		if v.Name == "maintenance-windows" && v.ConfigMap != nil && v.ConfigMap.Name == "ops-server-maintenance-windows" {
			fromCM = true
		}
	}
	g.Expect(fromCM).To(BeTrue())

	plain := renderChart(t, "ops-server", "observability", nil)
	for _, o := range plain.Objects {
		g.Expect(o.GetName()).NotTo(Equal("ops-server-maintenance-windows"))
	}
	args := strings.Join(toDeployment(t, find(t, plain.Objects, "Deployment", "ops-server-operator")).Spec.Template.Spec.Containers[0].Args, " ")
	g.Expect(args).NotTo(ContainSubstring("--maintenance-windows"))
}
