// Package idempotency makes a create safe to retry with an Idempotency-Key
// (Header, checked by ValidateKey and KeyFrom): the object is named after
// the key (or by the request; SetName names it either way) and carries the
// key (opsv1.AnnotationIdempotencyKey); when its name is taken, the
// object of that name, read from the API server, is answered instead if
// it carries the key and is what the request creates (a replay: 200,
// created false), and anything else is a 409.
package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/lookup"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// Name is the name of the object created for key: prefix and 16 hex
// digits of the key's SHA-256, a DNS label for a short prefix. The same
// key gives the same name, so a retry finds what its first attempt
// created.
func Name(prefix, key string) string {
	sum := sha256.Sum256([]byte(key))
	return prefix + hex.EncodeToString(sum[:])[:16]
}

// Annotate records key on obj; an empty key is not recorded.
func Annotate(obj client.Object, key string) {
	if key == "" {
		return
	}
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[opsv1.AnnotationIdempotencyKey] = key
	obj.SetAnnotations(a)
}

// Reused is the conflict of Create and Replay for an object named after
// its key: the 409 of an Idempotency-Key already used for a different
// request ("Idempotency-Key %q was already used for a different <request>
// request (<object> <name>)"). Without a key (a generated name that was
// taken) it is the API server's plain 409.
func Reused(key, request, object string) func(existing client.Object) error {
	return func(existing client.Object) error {
		if key == "" {
			return apierror.AlreadyExists(apierror.ReasonAlreadyExists, "the resource already exists")
		}
		return apierror.AlreadyExists(apierror.ReasonAlreadyExists,
			"Idempotency-Key %q was already used for a different %s request (%s %s)", key, request, object, existing.GetName())
	}
}

// Create creates obj (named and annotated by the caller: Name, Annotate)
// through writer. When the name is taken, the object of that name is read
// from the API server: if it carries key (not empty) and same(existing)
// holds, it is what an earlier attempt of this request created and is
// returned instead (replayed true); anything else is conflict(existing).
// Every other error, the existing object's read included (a 404 when it
// was deleted in between), is mapped by apierror.FromKubernetes.
func Create[T any, P lookup.Object[T]](ctx context.Context, writer client.Client, obj P, key string,
	same func(existing P) bool, conflict func(existing client.Object) error) (result P, replayed bool, err error) {
	err = writer.Create(ctx, obj)
	switch {
	case err == nil:
		return obj, false, nil
	case !apierrors.IsAlreadyExists(err):
		return nil, false, apierror.FromKubernetes(err)
	}
	existing, err := lookup.Get[T, P](ctx, writer, client.ObjectKeyFromObject(obj))
	if err != nil {
		return nil, false, apierror.FromKubernetes(err)
	}
	if err := check(existing, key, same, conflict); err != nil {
		return nil, false, err
	}
	return existing, true, nil
}

// Replay looks, before a create, for what an earlier attempt of the
// request with key created: the object named like obj, read from reader
// (the API server). None is found false. One that carries key and for
// which same holds is returned (found true); any other is
// conflict(existing) (found true). An error of the read is mapped by
// apierror.FromKubernetes.
func Replay[T any, P lookup.Object[T]](ctx context.Context, reader client.Reader, obj P, key string,
	same func(existing P) bool, conflict func(existing client.Object) error) (existing P, found bool, err error) {
	existing, err = lookup.Get[T, P](ctx, reader, client.ObjectKeyFromObject(obj))
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, apierror.FromKubernetes(err)
	}
	if err := check(existing, key, same, conflict); err != nil {
		return nil, true, err
	}
	return existing, true, nil
}

func check[P client.Object](existing P, key string, same func(P) bool, conflict func(client.Object) error) error {
	if key != "" && existing.GetAnnotations()[opsv1.AnnotationIdempotencyKey] == key && same(existing) {
		return nil
	}
	return conflict(existing)
}
