package mock

import (
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/rest"
)

// TestCountedConfig: requests through a CountedConfig are counted in
// RequestsMetric by method.
func TestCountedConfig(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer srv.Close()
	rt, err := rest.TransportFor(CountedConfig(&rest.Config{Host: srv.URL}))
	g.Expect(err).NotTo(HaveOccurred())
	before := testutil.ToFloat64(requests.WithLabelValues(http.MethodGet))
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/nodes", nil)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := rt.RoundTrip(req)
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(testutil.ToFloat64(requests.WithLabelValues(http.MethodGet))).To(Equal(before + 1))
}
