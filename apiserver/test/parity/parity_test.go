// Package parity is the GitOps parity suite: every upgrade request the
// REST API refuses at request time, applied instead as a
// ClusterUpgradeOperation (kubectl apply, a GitOps commit), is refused the
// same way — by the API server's admission (the CRD's schema and CEL
// rules), or, for what admission cannot know, by ops-operator's preflight
// with the same reason.
package parity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades"
	"github.com/tidbcloud/ops-server/apiserver/internal/upgrades/upgradestest"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.RunMain(m, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{opsv1.AddToScheme}},
		func(e *testenv.Environment) error { env = e; return nil }))
}

// notObjects are the refused requests that are not JSON objects at all: a
// manifest cannot carry them (kubectl refuses to parse it), so there is
// nothing to apply.
var notObjects = map[string]bool{"empty body": true, "not an object": true, "malformed JSON": true, "trailing data": true}

// asCR is a refused request body as the ClusterUpgradeOperation a user
// would commit: the request's fields are the spec's.
func asCR(ns, name, body string) (*unstructured.Unstructured, bool) {
	var spec map[string]any
	if json.Unmarshal([]byte(body), &spec) != nil || spec == nil {
		return nil, false
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(opsv1.GroupVersion.WithKind(opsv1.ClusterUpgradeOperationKind))
	u.SetNamespace(ns)
	u.SetName(name)
	return u, true
}

var index = regexp.MustCompile(`\[[0-9]+\]`)

// sameField reports whether the API server's refusal names the field the
// REST API named: a cause on that field, or on the list or object that
// holds it (a CEL rule on nodeGroupUpgrades names the list), or the field
// in the message (an unknown field).
func sameField(err error, restField string) bool {
	want := index.ReplaceAllString(restField, "")
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			got := index.ReplaceAllString(strings.TrimPrefix(c.Field, "spec."), "")
			if got == want || strings.HasPrefix(want, got+".") {
				return true
			}
		}
	}
	return strings.Contains(index.ReplaceAllString(err.Error(), ""), "spec."+want)
}

// TestRefusedRequestsAreRefusedCRs applies every request of the REST
// validation's table (upgradestest.InvalidRequests) as a CR with strict
// field validation, as `kubectl apply` does: each must be refused naming
// the same field. Where the REST API's words are the API package's own
// (the cloud naming rules, resolveConflicts and the target version on
// ack), the refusal carries the same words.
func TestRefusedRequestsAreRefusedCRs(t *testing.T) {
	ns := env.NewNamespace(t)
	skipped := map[string]bool{}
	for i, tc := range upgradestest.InvalidRequests() {
		u, ok := asCR(ns, fmt.Sprintf("refused-%d", i), tc.Body)
		if !ok {
			skipped[tc.Name] = true
			continue
		}
		t.Run(tc.Name, func(t *testing.T) {
			g := NewWithT(t)
			req, verr := upgrades.Decode([]byte(tc.Body))
			g.Expect(req).To(BeNil())
			g.Expect(verr).NotTo(BeNil())
			var restMsg string
			for _, v := range verr.Violations {
				if v.Field == tc.Field {
					restMsg = v.Description
				}
			}
			g.Expect(restMsg).NotTo(BeEmpty(), "the REST API names %s: %+v", tc.Field, verr.Violations)

			err := env.Client.Create(context.Background(), u, client.FieldValidation("Strict"))
			g.Expect(err).To(HaveOccurred(), "applied as a CR, %q is accepted", tc.Name)
			g.Expect(apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)).To(BeTrue(), "%v", err)
			g.Expect(sameField(err, tc.Field)).To(BeTrue(), "the refusal names %s: %v", tc.Field, err)
			for _, shared := range sharedReasons(restMsg) {
				// A name beyond the field's maxLength is refused by the
				// schema before the CEL rules run, in the schema's words.
				g.Expect(err.Error()).To(Or(ContainSubstring(shared), ContainSubstring("Too long")), "the same words as the REST API")
			}
		})
	}
	NewWithT(t).Expect(skipped).To(Equal(notObjects), "only bodies that are not JSON objects cannot be applied")
}

// sharedReasons are the parts of a REST refusal whose text the API
// package holds for the REST API and the CRD alike.
func sharedReasons(restMsg string) []string {
	var out []string
	for _, p := range []opsv1.CloudProvider{opsv1.CloudProviderEKS, opsv1.CloudProviderGKE, opsv1.CloudProviderAKS, opsv1.CloudProviderACK, opsv1.CloudProviderMock} {
		for _, rule := range []func(opsv1.CloudProvider) (opsv1.NameRule, bool){opsv1.ClusterNameRule, opsv1.NodeGroupNameRule} {
			if r, _ := rule(p); restMsg == "must be "+r.Description {
				out = append(out, restMsg)
			}
		}
	}
	for _, s := range []string{opsv1.ResolveConflictsOnACK, opsv1.ACKTargetVersionRule, opsv1.MaintenanceWindowDurationRule} {
		if strings.Contains(restMsg, s) {
			out = append(out, s)
		}
	}
	return out
}

// TestValidNamesAreValidCRs: the real-world names the REST API accepts
// (upgradestest.ValidNames) are accepted as CRs too.
func TestValidNamesAreValidCRs(t *testing.T) {
	ns := env.NewNamespace(t)
	for i, tc := range upgradestest.ValidNames() {
		t.Run(tc.Name, func(t *testing.T) {
			g := NewWithT(t)
			_, verr := upgrades.Decode([]byte(tc.Body))
			g.Expect(verr).To(BeNil())
			u, ok := asCR(ns, fmt.Sprintf("valid-%d", i), tc.Body)
			g.Expect(ok).To(BeTrue())
			g.Expect(env.Client.Create(context.Background(), u, client.FieldValidation("Strict"))).To(Succeed())
		})
	}
}

// TestPreflightRefusalsAreAdmittedCRs: what admission cannot check (a time
// zone) is admitted as a CR, and the REST refusal is the words of
// opsv1.MaintenanceWindow.Validate, the check ops-operator's preflight
// fails the operation with (reason InvalidSpec; the operator's own test
// asserts the message).
func TestPreflightRefusalsAreAdmittedCRs(t *testing.T) {
	ns := env.NewNamespace(t)
	for i, tc := range upgradestest.RefusedByPreflight() {
		t.Run(tc.Name, func(t *testing.T) {
			g := NewWithT(t)
			_, verr := upgrades.Decode([]byte(tc.Body))
			g.Expect(verr).NotTo(BeNil())
			var restMsg string
			for _, v := range verr.Violations {
				if v.Field == tc.Field {
					restMsg = v.Description
				}
			}
			g.Expect(restMsg).To(HavePrefix(opsv1.MaintenanceWindowTimeZoneRule), "%+v", verr.Violations)

			u, ok := asCR(ns, fmt.Sprintf("preflight-%d", i), tc.Body)
			g.Expect(ok).To(BeTrue())
			g.Expect(env.Client.Create(context.Background(), u, client.FieldValidation("Strict"))).To(Succeed())
			cr := &opsv1.ClusterUpgradeOperation{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(u), cr)).To(Succeed())
			var words []string
			for _, v := range cr.Spec.MaintenanceWindow.Validate() {
				words = append(words, v.Message)
			}
			g.Expect(words).To(ConsistOf(restMsg), "the operator's preflight refuses it with the REST API's words")
		})
	}
}
