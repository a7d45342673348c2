package logging

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/internal/config"
)

func TestNew(t *testing.T) {
	g := NewWithT(t)
	for _, format := range []string{"json", "console"} {
		log, flush, err := New(config.LogConfig{Level: "warn", Format: format})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(log.Enabled()).To(BeFalse(), "info is below warn")
		g.Expect(log.GetSink()).NotTo(BeNil())
		flush()
	}
	debug, _, err := New(config.LogConfig{Level: "debug", Format: "json"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(debug.V(1).Enabled()).To(BeTrue())
	_, _, err = New(config.LogConfig{Level: "loud", Format: "json"})
	g.Expect(err).To(HaveOccurred())
}
