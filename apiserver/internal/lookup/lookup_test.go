package lookup

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

func TestFind(t *testing.T) {
	ctx := context.Background()
	obj := func(name, uid, vmcluster string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + uid), Labels: map[string]string{"vmcluster": vmcluster}}}
	}
	c := fake.NewClientBuilder().WithObjects(obj("a", "a", "v1"), obj("b", "b", "v2"), obj("uid-a", "c", "v1")).Build()
	selector := map[string]string{"vmcluster": "v1"}
	missing := apierror.NotFound("NOT_FOUND", "not found")
	find := func(id string, selector map[string]string, missing error) (*corev1.ConfigMap, error) {
		return Find(ctx, c, "ns", id, selector, missing, func() ([]corev1.ConfigMap, error) {
			list := &corev1.ConfigMapList{}
			err := c.List(ctx, list, client.InNamespace("ns"), client.MatchingLabels(selector))
			return list.Items, err
		})
	}

	tests := []struct {
		name, id string
		want     string // the name found; "": missing
	}{
		{name: "by name", id: "a", want: "a"},
		{name: "by UID, another vmcluster's", id: "uid-b", want: ""},
		{name: "the name first", id: "uid-a", want: "uid-a"},
		{name: "another vmcluster's, by name", id: "b", want: ""},
		{name: "by UID of the vmcluster", id: "uid-c", want: "uid-a"},
		{name: "none", id: "z", want: ""},
		{name: "empty", id: "", want: ""},
		{name: "too long for a name", id: strings.Repeat("a", 254), want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := find(tt.id, selector, missing)
			if tt.want == "" {
				g.Expect(err).To(BeIdenticalTo(missing))
				g.Expect(got).To(BeNil())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Name).To(Equal(tt.want))
		})
	}

	t.Run("any object without a selector; none is nil without missing", func(t *testing.T) {
		g := NewWithT(t)
		got, err := find("uid-b", nil, nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Name).To(Equal("b"))
		got, err = find("z", nil, nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(BeNil())
	})

	t.Run("errors", func(t *testing.T) {
		g := NewWithT(t)
		failing := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
			Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return errors.New("connection refused")
			},
		}).Build()
		_, err := Find(ctx, failing, "ns", "a", nil, missing, func() ([]corev1.ConfigMap, error) { return nil, nil })
		e, ok := apierror.As(err)
		g.Expect(ok).To(BeTrue())
		g.Expect(e.Code).To(Equal(http.StatusInternalServerError), "the read's error, mapped")

		listErr := apierror.Unavailable("the cache is not ready")
		_, err = Find(ctx, c, "ns", "z", nil, missing, func() ([]corev1.ConfigMap, error) { return nil, listErr })
		g.Expect(err).To(BeIdenticalTo(listErr), "the list's error, as it is")
	})
}
