package parity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusterops"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

// TestRefusedOperationsAreRefusedCRs: every VMClusterOperation request the
// REST API refuses at request time, written as the VMClusterOperation a
// user would commit (camelCase fields), is refused by the API server's
// admission naming the same field. The one rule admission cannot know — a
// vmstorage target below the VMCluster's replicationFactor, or one that
// removes replicationFactor or more replicas in one operation — is
// ops-operator's preflight, with the REST API's words (both are
// opsv1.ReplicationRiskProblem; operator/internal/controller/vmclusterop
// TestReplicationRiskAndOneAtATime, apiserver/internal/vmclusterops
// TestCreateRefusalsNameTheirField).
func TestRefusedOperationsAreRefusedCRs(t *testing.T) {
	ns := env.NewNamespace(t)
	cases := []struct {
		name, rest, restField, cr, crField string
	}{
		{"no type", `{}`, "type", `{"vmCluster":{"name":"vm"}}`, "spec.type"},
		{"unknown type", `{"type":"Upgrade"}`, "type", `{"vmCluster":{"name":"vm"},"type":"Upgrade"}`, "spec.type"},
		{"sub-spec missing", `{"type":"HorizontalScaling"}`, "horizontal_scaling",
			`{"vmCluster":{"name":"vm"},"type":"HorizontalScaling"}`, "spec.horizontalScaling"},
		{"sub-spec of another type", `{"type":"HorizontalScaling","horizontal_scaling":{"vminsert":2},"restart":{"components":["vmstorage"]}}`, "restart",
			`{"vmCluster":{"name":"vm"},"type":"HorizontalScaling","horizontalScaling":{"vminsert":2},"restart":{"components":["vmstorage"]}}`, "spec.restart"},
		{"nothing to scale", `{"type":"HorizontalScaling","horizontal_scaling":{}}`, "horizontal_scaling",
			`{"vmCluster":{"name":"vm"},"type":"HorizontalScaling","horizontalScaling":{}}`, "spec.horizontalScaling"},
		{"replicas 0", `{"type":"HorizontalScaling","horizontal_scaling":{"vmselect":0}}`, "horizontal_scaling.vmselect",
			`{"vmCluster":{"name":"vm"},"type":"HorizontalScaling","horizontalScaling":{"vmselect":0}}`, "spec.horizontalScaling.vmselect"},
		{"replicas 101", `{"type":"HorizontalScaling","horizontal_scaling":{"vmstorage":101}}`, "horizontal_scaling.vmstorage",
			`{"vmCluster":{"name":"vm"},"type":"HorizontalScaling","horizontalScaling":{"vmstorage":101}}`, "spec.horizontalScaling.vmstorage"},
		{"resource kind", `{"type":"VerticalScaling","vertical_scaling":{"vmstorage":{"limits":{"gpu":"1"}}}}`, "vertical_scaling.vmstorage.limits",
			`{"vmCluster":{"name":"vm"},"type":"VerticalScaling","verticalScaling":{"vmstorage":{"limits":{"gpu":"1"}}}}`, "spec.verticalScaling.vmstorage.limits"},
		{"resources empty", `{"type":"VerticalScaling","vertical_scaling":{"vminsert":{}}}`, "vertical_scaling.vminsert",
			`{"vmCluster":{"name":"vm"},"type":"VerticalScaling","verticalScaling":{"vminsert":{}}}`, "spec.verticalScaling.vminsert"},
		{"restart nothing", `{"type":"Restart","restart":{"components":[]}}`, "restart.components",
			`{"vmCluster":{"name":"vm"},"type":"Restart","restart":{"components":[]}}`, "spec.restart.components"},
		{"restart unknown", `{"type":"Restart","restart":{"components":["vmagent"]}}`, "restart.components[0]",
			`{"vmCluster":{"name":"vm"},"type":"Restart","restart":{"components":["vmagent"]}}`, "spec.restart.components[0]"},
		{"order twice", `{"type":"Restart","restart":{"components":["vmstorage"]},"order":["vmstorage","vmstorage"]}`, "order[1]",
			`{"vmCluster":{"name":"vm"},"type":"Restart","restart":{"components":["vmstorage"]},"order":["vmstorage","vmstorage"]}`, "spec.order[1]"},
		{"step timeout", `{"type":"Restart","restart":{"components":["vmstorage"]},"step_timeout":"10s"}`, "step_timeout",
			`{"vmCluster":{"name":"vm"},"type":"Restart","restart":{"components":["vmstorage"]},"stepTimeout":"10s"}`, "spec.stepTimeout"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, verr := vmclusterops.Decode([]byte(tc.rest))
			g.Expect(verr).NotTo(BeNil())
			fields := []string{}
			for _, v := range verr.Violations {
				fields = append(fields, v.Field)
			}
			g.Expect(fields).To(ContainElement(tc.restField))

			var spec map[string]any
			g.Expect(json.Unmarshal([]byte(tc.cr), &spec)).To(Succeed())
			u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
			u.SetGroupVersionKind(opsv1.GroupVersion.WithKind(opsv1.VMClusterOperationKind))
			u.SetNamespace(ns)
			u.SetName(fmt.Sprintf("refused-%d", i))
			err := env.Client.Create(context.Background(), u, client.FieldValidation("Strict"))
			g.Expect(err).To(HaveOccurred(), "applied as a CR, %q is accepted", tc.name)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			var status apierrors.APIStatus
			g.Expect(errors.As(err, &status)).To(BeTrue())
			causes := []string{}
			for _, c := range status.Status().Details.Causes {
				causes = append(causes, c.Field)
			}
			g.Expect(causes).To(ContainElement(tc.crField), "%v", err)
		})
	}
}
