package auth

import (
	"container/list"
	"math"
	"net"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DefaultMaxRateLimitKeys bounds the number of callers (or client
// addresses) a RateLimiter tracks at once.
const DefaultMaxRateLimitKeys = 65536

// RateLimiter gives each key (a user name, or a client address, see
// ClientKey) its own token bucket. Buckets are kept in LRU order: those
// idle for longer than it takes to refill are dropped, and beyond maxKeys
// the least recently used is, so a flood from many addresses costs bounded
// memory.
type RateLimiter struct {
	qps     rate.Limit
	burst   int
	maxKeys int
	now     func() time.Time

	mu      sync.Mutex
	order   *list.List // front: most recently seen; values are *bucket
	buckets map[string]*list.Element
}

type bucket struct {
	key     string
	limiter *rate.Limiter
	seen    time.Time
}

// NewRateLimiter returns a limiter of qps requests per second with the
// given burst per key, tracking at most DefaultMaxRateLimitKeys keys; qps
// 0 returns nil (no limit).
func NewRateLimiter(qps float64, burst int) *RateLimiter {
	if qps <= 0 {
		return nil
	}
	return &RateLimiter{qps: rate.Limit(qps), burst: burst, maxKeys: DefaultMaxRateLimitKeys, now: time.Now, order: list.New(), buckets: map[string]*list.Element{}}
}

// Allow takes one request from key's bucket. When the bucket is empty it
// returns false and how long to wait before the next request.
func (l *RateLimiter) Allow(key string) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	idle := time.Duration(float64(l.burst)/float64(l.qps)*float64(time.Second)) + time.Minute
	for back := l.order.Back(); back != nil && now.Sub(back.Value.(*bucket).seen) > idle; back = l.order.Back() {
		l.remove(back)
	}
	var b *bucket
	if el, ok := l.buckets[key]; ok {
		l.order.MoveToFront(el)
		b = el.Value.(*bucket)
	} else {
		for l.order.Len() >= l.maxKeys {
			l.remove(l.order.Back())
		}
		b = &bucket{key: key, limiter: rate.NewLimiter(l.qps, l.burst)}
		l.buckets[key] = l.order.PushFront(b)
	}
	b.seen = now
	r := b.limiter.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Second
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

func (l *RateLimiter) remove(el *list.Element) {
	l.order.Remove(el)
	delete(l.buckets, el.Value.(*bucket).key)
}

// keys is the number of buckets held.
func (l *RateLimiter) keys() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.order.Len()
}

// ClientKey is the rate-limit key of a client address: the IPv4 address,
// or the /64 network of an IPv6 address (one host usually holds a whole
// /64, so per-address buckets would not limit it). Anything unparsable is
// its own key.
func ClientKey(ip string) string {
	parsed := net.ParseIP(ip)
	if parsed == nil {
		return ip
	}
	if v4 := parsed.To4(); v4 != nil {
		return v4.String()
	}
	return parsed.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// retryAfterSeconds rounds a wait up to whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
