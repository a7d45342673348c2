// Package cachewait waits, after a write to the API server, until the
// informer cache sees it, so that a read right after the write (a GET
// after the POST, a list after the DELETE) sees it too.
package cachewait

import (
	"context"
	"reflect"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/lookup"
)

// DefaultTimeout bounds a wait whose timeout is not set.
const DefaultTimeout = 5 * time.Second

// Interval is how often the cache is read.
const Interval = 20 * time.Millisecond

// For waits, bounded by timeout (DefaultTimeout when not positive), until
// the object key read from reader (the informer cache) satisfies done,
// which is called with nil while the object is absent. A read that fails
// otherwise is retried. It gives up silently, logging at V(1): the caller
// answers from the write's result either way.
//
// P is a pointer to an object type, inferred from done:
//
//	cachewait.For(ctx, cache, key, timeout, func(b *opsv1.ClusterBackup) bool { return b != nil })
func For[T any, P lookup.Object[T]](ctx context.Context, reader client.Reader, key client.ObjectKey, timeout time.Duration, done func(P) bool) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	err := wait.PollUntilContextTimeout(ctx, Interval, timeout, true, func(ctx context.Context) (bool, error) {
		obj, err := lookup.Get[T, P](ctx, reader, key)
		if apierrors.IsNotFound(err) {
			return done(nil), nil
		}
		return err == nil && done(obj), nil
	})
	if err != nil {
		logr.FromContextOrDiscard(ctx).V(1).Info("Cache did not catch up with a write in time",
			"kind", reflect.TypeFor[T]().Name(), "object", klog.KRef(key.Namespace, key.Name), "error", err.Error())
	}
}
