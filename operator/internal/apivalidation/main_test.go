/*
Copyright 2026 The ops-server Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package apivalidation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

// env is the control plane shared by every test; each test function works in
// a namespace of its own.
var env *testenv.Environment

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start(testenv.Options{
		AddToScheme: []func(*runtime.Scheme) error{v1alpha1.AddToScheme},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// obj is a JSON object, the body of an unstructured object. Tests build
// objects as JSON rather than Go types so that they can send what the Go
// types cannot express (absent versus empty fields, wrong types).
type obj = map[string]any

// mustJSON parses a JSON object literal.
func mustJSON(s string) obj {
	var o obj
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		panic(fmt.Sprintf("bad JSON in test: %v\n%s", err, s))
	}
	return o
}

// newObject builds an object of our API group with the given spec.
func newObject(kind, namespace, name string, spec obj) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: obj{"spec": spec}}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(kind))
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// rejection is what an API server rejection must name: the field path (as in
// the error and in its causes) and a fragment of the message.
type rejection struct {
	field string
	msg   string
}

// specCase is one object to create: a change to a valid spec, and either
// nil (the object is accepted) or the expected rejection.
type specCase struct {
	name   string
	mutate func(spec obj)
	reject *rejection
}

// rejected is a shorthand for a rejection.
func rejected(field, msg string) *rejection {
	return &rejection{field: field, msg: msg}
}

// expectResult checks the outcome of a create or update against want.
func expectResult(g Gomega, err error, want *rejection) {
	if want == nil {
		g.Expect(err).NotTo(HaveOccurred())
		return
	}
	g.Expect(err).To(HaveOccurred(), "expected a rejection naming %s", want.field)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected 422 Invalid, got: %v", err)
	g.Expect(err.Error()).To(ContainSubstring(want.field+":"), "the message must name the field")
	g.Expect(err.Error()).To(ContainSubstring(want.msg))
	g.Expect(causeFields(err)).To(ContainElement(want.field), "the status causes must name the field: %v", err)
}

// causeFields returns the fields named by the causes of an API status error.
func causeFields(err error) []string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	var fields []string
	for _, c := range status.Status().Details.Causes {
		fields = append(fields, c.Field)
	}
	return fields
}

// runCreateCases creates one object per case, in a namespace of the test's
// own, from a fresh copy of base changed by the case.
func runCreateCases(t *testing.T, kind string, base func() obj, cases []specCase) {
	t.Helper()
	ns := env.NewNamespace(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := base()
			if tc.mutate != nil {
				tc.mutate(spec)
			}
			o := newObject(kind, ns, fmt.Sprintf("case-%03d", i), spec)
			err := env.Client.Create(context.Background(), o)
			expectResult(g, err, tc.reject)
		})
	}
}

// list returns the list at key of o.
func list(o obj, key string) []any {
	l, _ := o[key].([]any)
	return l
}

// item returns the i-th object of the list at key of o.
func item(o obj, key string, i int) obj {
	return list(o, key)[i].(obj)
}

// repeat returns a string of n times c.
func repeat(c byte, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return string(b)
}
