package maintenancewindows

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

const rules = `
windows:
- window: {days: [Sunday], start: "04:00", duration: 1h}
- cloudProvider: eks
  window: {days: [Saturday], start: "02:00", duration: 4h}
- cloudProvider: eks
  region: us-west-2
  window: {days: [Friday], start: "22:00", duration: 2h, timeZone: America/Los_Angeles}
- cloudProvider: eks
  region: us-west-2
  k8sClusterName: prod-1
  window: {days: [Tuesday], start: "01:00", duration: 30m}
- cloudProvider: eks
  window: {days: [Monday], start: "02:00", duration: 4h}
`

func TestFor(t *testing.T) {
	d, err := Parse([]byte(rules))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	cases := []struct {
		name, provider, region, cluster string
		day, source                     string
	}{
		{"the cluster's own rule", "eks", "us-west-2", "prod-1", "Tuesday", "default: windows[3] (cloudProvider=eks, region=us-west-2, k8sClusterName=prod-1)"},
		{"the region's", "eks", "us-west-2", "prod-2", "Friday", "default: windows[2] (cloudProvider=eks, region=us-west-2)"},
		{"the provider's, the first of equals", "eks", "eu-west-1", "x", "Saturday", "default: windows[1] (cloudProvider=eks)"},
		{"the catch-all", "gke", "us-central1", "x", "Sunday", "default: windows[0]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := d.For(tc.provider, tc.region, tc.cluster)
			g.Expect(w).NotTo(BeNil())
			g.Expect(string(w.Days[0])).To(Equal(tc.day))
			g.Expect(w.Source).To(Equal(tc.source))
		})
	}
	var none *Defaults
	NewWithT(t).Expect(none.For("eks", "r", "c")).To(BeNil())
	only, err := Parse([]byte("windows:\n- cloudProvider: aks\n  window: {days: [Monday], start: \"00:00\", duration: 1h}\n"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(only.For("eks", "r", "c")).To(BeNil())
}

func TestParseRefuses(t *testing.T) {
	cases := map[string]struct{ yaml, words string }{
		"unknown field":    {"windows:\n- cloudProvidr: eks\n  window: {days: [Monday], start: \"00:00\", duration: 1h}\n", "cloudProvidr"},
		"unknown provider": {"windows:\n- cloudProvider: azure\n  window: {days: [Monday], start: \"00:00\", duration: 1h}\n", `windows[0].cloudProvider "azure"`},
		"bad window":       {"windows:\n- window: {days: [Monday], start: \"00:00\", duration: 200h}\n", "windows[0]: maintenanceWindow.duration must be between 1m and 168h"},
		"unknown zone":     {"windows:\n- window: {days: [Monday], start: \"00:00\", duration: 1h, timeZone: Nowhere/Land}\n", "unknown time zone"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			NewWithT(t).Expect(err).To(HaveOccurred())
			NewWithT(t).Expect(strings.Contains(err.Error(), tc.words)).To(BeTrue(), err.Error())
		})
	}
}
