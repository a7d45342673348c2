package mock

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// RequestsMetric counts the Kubernetes requests the simulated cloud makes
// for its own state (ConfigMaps) and Nodes, by HTTP method: in a real
// cloud these are cloud API calls, so whoever measures the Kubernetes
// requests of the operator itself subtracts them from client-go's
// rest_client_requests_total.
const RequestsMetric = "ops_mock_cloud_kubernetes_requests_total"

var (
	requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: RequestsMetric,
		Help: "Kubernetes API requests made by the simulated cloud (cloudProvider mock) for its state and Nodes, by method.",
	}, []string{"method"})
	registerOnce sync.Once
)

// CountedConfig returns a copy of cfg whose requests are counted in
// RequestsMetric (registered with controller-runtime's metrics registry on
// first use). Build the Provider's Client from it.
func CountedConfig(cfg *rest.Config) *rest.Config {
	registerOnce.Do(func() { metrics.Registry.MustRegister(requests) })
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			requests.WithLabelValues(r.Method).Inc()
			return rt.RoundTrip(r)
		})
	})
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
