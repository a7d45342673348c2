package idempotency

import (
	"context"
	"errors"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// request is what a create request makes: a ConfigMap named after the
// key, its data standing for the spec.
func request(key string, data map[string]string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: Name("op-", key)}, Data: data}
	Annotate(cm, key)
	return cm
}

func sameData(obj *corev1.ConfigMap) func(*corev1.ConfigMap) bool {
	return func(existing *corev1.ConfigMap) bool { return equality.Semantic.DeepEqual(existing.Data, obj.Data) }
}

// apiError is err as an API error: its code and message.
func apiError(g Gomega, err error) (int, string) {
	e, ok := apierror.As(err)
	g.Expect(ok).To(BeTrue(), "%v is an API error", err)
	return e.Code, e.Message
}

func TestCreate(t *testing.T) {
	ctx := context.Background()
	first := map[string]string{"replicas": "2"}

	t.Run("plain create", func(t *testing.T) {
		g := NewWithT(t)
		c := fake.NewClientBuilder().Build()
		obj := request("k1", first)
		got, replayed, err := Create(ctx, c, obj, "k1", sameData(obj), Reused("k1", "operation", "operation"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(replayed).To(BeFalse())
		g.Expect(got).To(BeIdenticalTo(obj))
		stored := &corev1.ConfigMap{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), stored)).To(Succeed())
		g.Expect(stored.Annotations).To(HaveKeyWithValue(opsv1.AnnotationIdempotencyKey, "k1"))
	})

	tests := []struct {
		name     string
		key      string
		data     map[string]string
		replayed bool
		message  string
	}{
		{name: "the same key and request replay", key: "k1", data: first, replayed: true},
		{name: "another request with the key is a 409", key: "k1", data: map[string]string{"replicas": "3"},
			message: `Idempotency-Key "k1" was already used for a different upgrade request (operation ` + Name("op-", "k1") + ")"},
		{name: "another key on a taken name is a 409", key: "k2",
			message: `Idempotency-Key "k2" was already used for a different upgrade request (operation ` + Name("op-", "k1") + ")"},
		{name: "no key on a taken name is the plain 409", key: "", data: first, message: "the resource already exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := fake.NewClientBuilder().WithObjects(request("k1", first)).Build()
			obj := request(tt.key, tt.data)
			obj.Name = Name("op-", "k1") // the name is taken
			got, replayed, err := Create(ctx, c, obj, tt.key, sameData(obj), Reused(tt.key, "upgrade", "operation"))
			g.Expect(replayed).To(Equal(tt.replayed))
			if tt.replayed {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).NotTo(BeIdenticalTo(obj))
				g.Expect(got.ResourceVersion).NotTo(BeEmpty(), "the existing object, read from the API server")
				g.Expect(got.Annotations).To(HaveKeyWithValue(opsv1.AnnotationIdempotencyKey, "k1"))
				return
			}
			code, message := apiError(g, err)
			g.Expect(code).To(Equal(http.StatusConflict))
			g.Expect(message).To(Equal(tt.message))
			g.Expect(got).To(BeNil())
		})
	}

	t.Run("the request's own conflict, with or without a key", func(t *testing.T) {
		g := NewWithT(t)
		c := fake.NewClientBuilder().WithObjects(request("k1", first)).Build()
		for _, key := range []string{"", "k1"} {
			obj := request(key, map[string]string{"other": "1"})
			obj.Name = Name("op-", "k1")
			_, _, err := Create(ctx, c, obj, key, sameData(obj), func(existing client.Object) error {
				return apierror.AlreadyExists(apierror.ReasonAlreadyExists, "%s is taken", existing.GetName())
			})
			_, message := apiError(g, err)
			g.Expect(message).To(Equal(Name("op-", "k1") + " is taken"))
		}
	})

	t.Run("deleted between the create and the read: 404", func(t *testing.T) {
		g := NewWithT(t)
		c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
			Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
				return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "configmaps"}, "x")
			},
		}).Build()
		obj := request("k1", first)
		_, replayed, err := Create(ctx, c, obj, "k1", sameData(obj), Reused("k1", "operation", "operation"))
		g.Expect(replayed).To(BeFalse())
		code, _ := apiError(g, err)
		g.Expect(code).To(Equal(http.StatusNotFound))
	})

	t.Run("another error of the create is the API server's", func(t *testing.T) {
		g := NewWithT(t)
		c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
			Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
				return apierrors.NewServiceUnavailable("down")
			},
		}).Build()
		obj := request("k1", first)
		_, _, err := Create(ctx, c, obj, "k1", sameData(obj), Reused("k1", "operation", "operation"))
		code, _ := apiError(g, err)
		g.Expect(code).To(Equal(http.StatusServiceUnavailable))
	})
}

func TestReplay(t *testing.T) {
	ctx := context.Background()
	first := map[string]string{"replicas": "2"}
	c := fake.NewClientBuilder().WithObjects(request("k1", first)).Build()
	reused := Reused("k1", "backup", "backup")

	g := NewWithT(t)
	obj := request("k1", first)
	existing, found, err := Replay(ctx, c, obj, "k1", sameData(obj), reused)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeTrue())
	g.Expect(existing.ResourceVersion).NotTo(BeEmpty())

	obj = request("k1", map[string]string{"replicas": "3"})
	existing, found, err = Replay(ctx, c, obj, "k1", sameData(obj), reused)
	g.Expect(found).To(BeTrue())
	g.Expect(existing).To(BeNil())
	code, message := apiError(g, err)
	g.Expect(code).To(Equal(http.StatusConflict))
	g.Expect(message).To(Equal(`Idempotency-Key "k1" was already used for a different backup request (backup ` + Name("op-", "k1") + ")"))

	obj = request("k2", first)
	_, found, err = Replay(ctx, c, obj, "k2", sameData(obj), reused)
	g.Expect(found).To(BeFalse(), "nothing is named after k2")
	g.Expect(err).NotTo(HaveOccurred())

	failing := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("connection refused")
		},
	}).Build()
	_, found, err = Replay(ctx, failing, obj, "k2", sameData(obj), reused)
	g.Expect(found).To(BeFalse())
	code, _ = apiError(g, err)
	g.Expect(code).To(Equal(http.StatusInternalServerError))
}

func TestNameAndAnnotate(t *testing.T) {
	g := NewWithT(t)
	n := Name("backup-", "retry-1")
	g.Expect(n).To(Equal(Name("backup-", "retry-1")), "the same key, the same name")
	g.Expect(n).NotTo(Equal(Name("backup-", "retry-2")))
	g.Expect(n).To(HavePrefix("backup-"))
	g.Expect(n).To(HaveLen(len("backup-") + 16))
	g.Expect(validation.IsDNS1123Label(n)).To(BeEmpty())

	cm := &corev1.ConfigMap{}
	Annotate(cm, "")
	g.Expect(cm.Annotations).To(BeNil(), "no key, no annotation")
	Annotate(cm, "k")
	g.Expect(cm.Annotations).To(Equal(map[string]string{opsv1.AnnotationIdempotencyKey: "k"}))
}
