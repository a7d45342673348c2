package cachewait

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

var key = client.ObjectKey{Namespace: "ns", Name: "cm"}

func configMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
}

// start runs For in the background and reports when it returned.
func start(ctx context.Context, r client.Reader, timeout time.Duration, done func(*corev1.ConfigMap) bool) <-chan struct{} {
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		For(ctx, r, key, timeout, done)
	}()
	return returned
}

func TestFor(t *testing.T) {
	t.Run("returns when the object is done", func(t *testing.T) {
		g := NewWithT(t)
		c := fake.NewClientBuilder().WithObjects(configMap()).Build()
		var seen *corev1.ConfigMap
		returned := start(t.Context(), c, time.Hour, func(cm *corev1.ConfigMap) bool { seen = cm; return cm != nil })
		g.Eventually(returned).WithTimeout(time.Minute).Should(BeClosed())
		g.Expect(seen.Name).To(Equal(key.Name))
	})

	t.Run("an absent object is nil", func(t *testing.T) {
		g := NewWithT(t)
		c := fake.NewClientBuilder().Build()
		returned := start(t.Context(), c, time.Hour, func(cm *corev1.ConfigMap) bool { return cm == nil })
		g.Eventually(returned).WithTimeout(time.Minute).Should(BeClosed())
	})

	t.Run("polls until the write shows", func(t *testing.T) {
		g := NewWithT(t)
		c := fake.NewClientBuilder().Build()
		polls := 0
		returned := start(t.Context(), c, time.Hour, func(cm *corev1.ConfigMap) bool {
			polls++
			if polls == 3 {
				g.Expect(c.Create(context.Background(), configMap())).To(Succeed())
			}
			return cm != nil
		})
		g.Eventually(returned).WithTimeout(time.Minute).Should(BeClosed())
		g.Expect(polls).To(Equal(4))
	})

	t.Run("retries a failing read", func(t *testing.T) {
		g := NewWithT(t)
		fails := 2
		c := fake.NewClientBuilder().WithObjects(configMap()).WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if fails > 0 {
					fails--
					return errors.New("cache not started")
				}
				return c.Get(ctx, k, obj, opts...)
			},
		}).Build()
		returned := start(t.Context(), c, time.Hour, func(cm *corev1.ConfigMap) bool { return cm != nil })
		g.Eventually(returned).WithTimeout(time.Minute).Should(BeClosed())
		g.Expect(fails).To(BeZero())
	})

	t.Run("gives up after the timeout, logging at V(1)", func(t *testing.T) {
		g := NewWithT(t)
		c := fake.NewClientBuilder().Build()
		var lines []string
		log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 1})
		polls := 0
		returned := start(logr.NewContext(t.Context(), log), c, 50*time.Millisecond, func(*corev1.ConfigMap) bool { polls++; return false })
		g.Eventually(returned).WithTimeout(time.Minute).Should(BeClosed())
		g.Expect(polls).To(BeNumerically(">=", 1))
		g.Expect(lines).To(ConsistOf(And(ContainSubstring("Cache did not catch up"), ContainSubstring(`"kind"="ConfigMap"`), ContainSubstring(`"name"="cm"`))))
	})

	t.Run("a cancelled request stops the wait", func(t *testing.T) {
		g := NewWithT(t)
		c := fake.NewClientBuilder().Build()
		ctx, cancel := context.WithCancel(t.Context())
		polls := 0
		returned := start(ctx, c, time.Hour, func(*corev1.ConfigMap) bool {
			polls++
			if polls == 2 {
				cancel()
			}
			return false
		})
		g.Eventually(returned).WithTimeout(time.Minute).Should(BeClosed())
		g.Expect(polls).To(BeNumerically(">=", 2))
	})
}
