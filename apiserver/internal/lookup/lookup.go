// Package lookup finds the object a route's id names among the objects
// ops-apiserver keeps for a vmcluster (backups, backup schedules,
// restores, operations): an id is the object's name or its UID.
package lookup

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

// Object is a pointer to an object type T (*opsv1.ClusterBackup for
// opsv1.ClusterBackup): what Get, Find and their users in other packages
// (idempotency, cachewait) take to read an object of a type they are
// given.
type Object[T any] interface {
	*T
	client.Object
}

// Get reads the object key from reader into a new T.
func Get[T any, P Object[T]](ctx context.Context, reader client.Reader, key client.ObjectKey) (P, error) {
	obj := P(new(T))
	if err := reader.Get(ctx, key, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// Find returns the object id names: the object of namespace named id,
// read from reader, if its labels carry selector (it is the vmcluster's;
// nil: any object), or else the one of list (the vmcluster's objects)
// with the UID id. When there is none it returns missing (the resource's
// 404; nil: none is nil, nil). An error of the read is mapped by
// apierror.FromKubernetes, one of list is returned as it is.
func Find[T any, P Object[T]](ctx context.Context, reader client.Reader, namespace, id string, selector map[string]string,
	missing error, list func() ([]T, error)) (P, error) {
	if id == "" || len(id) > validation.DNS1123SubdomainMaxLength {
		return nil, missing
	}
	obj, err := Get[T, P](ctx, reader, types.NamespacedName{Namespace: namespace, Name: id})
	switch {
	case err == nil:
		if !carries(obj.GetLabels(), selector) {
			return nil, missing
		}
		return obj, nil
	case !apierrors.IsNotFound(err):
		return nil, apierror.FromKubernetes(err)
	}
	items, err := list()
	if err != nil {
		return nil, err
	}
	for i := range items {
		if p := P(&items[i]); string(p.GetUID()) == id {
			return p, nil
		}
	}
	return nil, missing
}

func carries(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}
