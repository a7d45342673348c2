package auth

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// RateLimiter gives each caller (by user name) its own token bucket.
// Buckets of callers idle for longer than it takes to refill are dropped.
type RateLimiter struct {
	qps   rate.Limit
	burst int
	now   func() time.Time

	mu       sync.Mutex
	buckets  map[string]*bucket
	lastTrim time.Time
}

type bucket struct {
	limiter *rate.Limiter
	seen    time.Time
}

// NewRateLimiter returns a limiter of qps requests per second with the
// given burst per caller; qps 0 returns nil (no limit).
func NewRateLimiter(qps float64, burst int) *RateLimiter {
	if qps <= 0 {
		return nil
	}
	return &RateLimiter{qps: rate.Limit(qps), burst: burst, now: time.Now, buckets: map[string]*bucket{}}
}

// Allow takes one request from caller's bucket. When the bucket is empty
// it returns false and how long to wait before the next request.
func (l *RateLimiter) Allow(caller string) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	idle := time.Duration(float64(l.burst)/float64(l.qps)*float64(time.Second)) + time.Minute
	if now.Sub(l.lastTrim) > idle {
		for k, b := range l.buckets {
			if now.Sub(b.seen) > idle {
				delete(l.buckets, k)
			}
		}
		l.lastTrim = now
	}
	b := l.buckets[caller]
	if b == nil {
		b = &bucket{limiter: rate.NewLimiter(l.qps, l.burst)}
		l.buckets[caller] = b
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

// retryAfterSeconds rounds a wait up to whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
