package watch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

// Options configure a Broker; zero values take the defaults.
type Options struct {
	// Heartbeat is the interval of the comment lines that keep idle
	// streams (and proxies) alive. Default 15s.
	Heartbeat time.Duration
	// MaxDuration ends a stream cleanly; the client reconnects with
	// Last-Event-ID. Default 30m.
	MaxDuration time.Duration
	// WriteTimeout bounds each write to the client. Default 30s.
	WriteTimeout time.Duration
	// MaxPerCaller and MaxTotal cap the concurrent streams of one caller
	// and of the server; over either the request is a 429. Defaults 10
	// and 500.
	MaxPerCaller int
	MaxTotal     int
	// Buffer is how many changes a stream may lag behind before it is
	// dropped. Default 256.
	Buffer int
	// Caller names the caller of a request (the per-caller cap); nil or
	// "" counts every caller as one.
	Caller func(context.Context) string
}

// The defaults of Options.
const (
	DefaultHeartbeat    = 15 * time.Second
	DefaultMaxDuration  = 30 * time.Minute
	DefaultWriteTimeout = 30 * time.Second
	DefaultMaxPerCaller = 10
	DefaultMaxTotal     = 500
	DefaultBuffer       = 256
)

// Broker is what every stream shares: the limits, the timing, the
// shutdown signal.
type Broker struct {
	opts    Options
	metrics brokerMetrics

	mu        sync.Mutex
	total     int
	perCaller map[string]int

	stopOnce sync.Once
	done     chan struct{}
}

type brokerMetrics struct {
	active  *prometheus.GaugeVec
	dropped *prometheus.CounterVec
}

// NewBroker returns a broker with opts (defaults filled in).
func NewBroker(opts Options) *Broker {
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.MaxDuration <= 0 {
		opts.MaxDuration = DefaultMaxDuration
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.MaxPerCaller <= 0 {
		opts.MaxPerCaller = DefaultMaxPerCaller
	}
	if opts.MaxTotal <= 0 {
		opts.MaxTotal = DefaultMaxTotal
	}
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultBuffer
	}
	b := &Broker{opts: opts, perCaller: map[string]int{}, done: make(chan struct{})}
	b.metrics = brokerMetrics{
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ops_apiserver_watch_streams",
			Help: "Open watch streams by kind.",
		}, []string{"kind"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ops_apiserver_watch_streams_dropped_total",
			Help: "Watch streams dropped because the client did not keep up, by kind.",
		}, []string{"kind"}),
	}
	return b
}

// Collectors are the broker's metrics: ops_apiserver_watch_streams{kind}
// and ops_apiserver_watch_streams_dropped_total{kind}.
func (b *Broker) Collectors() []prometheus.Collector {
	return []prometheus.Collector{b.metrics.active, b.metrics.dropped}
}

// Options returns the broker's options, defaults filled in.
func (b *Broker) Options() Options { return b.opts }

// Stop ends every stream (the server is shutting down: http.Server's
// Shutdown does not cancel the contexts of running requests).
func (b *Broker) Stop() { b.stopOnce.Do(func() { close(b.done) }) }

// NewHub registers a hub of kind on the cache's informer of obj.
func (b *Broker) NewHub(ctx context.Context, c cache.Cache, obj client.Object, kind string, keep func(client.Object) bool) (*Hub, error) {
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("the %s informer: %w", kind, err)
	}
	h := newHub(kind, b)
	h.Keep = keep
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", kind, err)
	}
	h.synced = reg.HasSynced
	if ls, ok := inf.(interface{ LastSyncResourceVersion() string }); ok {
		h.lastSync = ls.LastSyncResourceVersion
	}
	return h, nil
}

// NewTestHub returns a hub fed by hand (its On* methods), for tests.
func (b *Broker) NewTestHub(kind string) *Hub { return newHub(kind, b) }

// acquire takes a stream slot for caller; release gives it back.
func (b *Broker) acquire(caller string) (release func(), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.total >= b.opts.MaxTotal {
		return nil, apierror.ResourceExhausted(ReasonTooManyWatches, "the server has %d open watch streams, its maximum; retry later", b.total)
	}
	if b.perCaller[caller] >= b.opts.MaxPerCaller {
		return nil, apierror.ResourceExhausted(ReasonTooManyWatches, "you have %d open watch streams, the maximum per caller; close one or retry later", b.perCaller[caller])
	}
	b.total++
	b.perCaller[caller]++
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.total--
			if b.perCaller[caller]--; b.perCaller[caller] <= 0 {
				delete(b.perCaller, caller)
			}
		})
	}, nil
}

// ReasonTooManyWatches is the error reason of a 429 from the caps.
const ReasonTooManyWatches = "TOO_MANY_WATCHES"
