package upgrades_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/events"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
	"github.com/tidbcloud/ops-server/operator/pkg/cloud/mock"
)

func TestEventsOfAnOperationAndOfWhatItTouched(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	a := newAPI(t)
	op := &opsv1.ClusterUpgradeOperation{
		ObjectMeta: metav1.ObjectMeta{Name: "ev-op", Namespace: a.ns},
		Spec: opsv1.ClusterUpgradeOperationSpec{K8sClusterName: "dev-cluster", Region: "local", CloudProvider: opsv1.CloudProviderMock, TargetVersion: "1.30",
			NodeGroupUpgrades: []opsv1.NodeGroupUpgrade{{NodeGroupName: "vmstorage", Strategy: opsv1.StrategyInPlace}}},
	}
	g.Expect(env.Client.Create(ctx, op)).To(Succeed())
	var nodes corev1.NodeList
	g.Expect(env.Client.List(ctx, &nodes, client.MatchingLabels{mock.NodeGroupLabel: "vmstorage"})).To(Succeed())
	g.Expect(nodes.Items).NotTo(BeEmpty())
	var others corev1.NodeList
	g.Expect(env.Client.List(ctx, &others, client.MatchingLabels{mock.NodeGroupLabel: "observability-ng"})).To(Succeed())
	g.Expect(others.Items).NotTo(BeEmpty())

	at := func(ago time.Duration) metav1.Time { return metav1.NewTime(time.Now().Add(-ago).Truncate(time.Second)) }
	mk := func(name, ns string, ref corev1.ObjectReference, typ, reason string, ago time.Duration) {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, InvolvedObject: ref, Type: typ, Reason: reason,
			Message: reason, FirstTimestamp: at(ago), LastTimestamp: at(ago), Source: corev1.EventSource{Component: "ops-operator"}}
		g.Expect(env.Client.Create(ctx, ev)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ev) })
	}
	node := func(n corev1.Node) corev1.ObjectReference {
		return corev1.ObjectReference{Kind: "Node", Name: n.Name, UID: n.UID}
	}
	mk("op-started", a.ns, corev1.ObjectReference{Kind: "ClusterUpgradeOperation", Namespace: a.ns, Name: op.Name, UID: op.UID}, corev1.EventTypeNormal, "StepStarted", 3*time.Minute)
	mk(a.ns+"-drained", "default", node(nodes.Items[0]), corev1.EventTypeWarning, "DrainBlocked", time.Minute)
	mk(a.ns+"-other-node", "default", node(others.Items[0]), corev1.EventTypeWarning, "NodeNotReady", 30*time.Second)

	get := func(query string) (int, events.List, string) {
		code, b := a.do(http.MethodGet, "/ops/api/v1/upgradeOperations/"+string(op.UID)+"/events"+query, "", nil)
		var l events.List
		if code == http.StatusOK {
			g.Expect(json.Unmarshal(b, &l)).To(Succeed())
		}
		return code, l, string(b)
	}
	code, l, body := get("")
	g.Expect(code).To(Equal(http.StatusOK), body)
	var got []string
	for _, e := range l.Events {
		got = append(got, e.Reason+"/"+e.Object.Kind)
	}
	// The other node group's Node is not touched by the operation.
	g.Expect(got).To(Equal([]string{"DrainBlocked/Node", "StepStarted/ClusterUpgradeOperation"}))
	_, l, _ = get("?type=Warning")
	g.Expect(l.Events).To(HaveLen(1))
	g.Expect(l.Events[0].Object.Name).To(Equal(nodes.Items[0].Name))
	code, _, body = get("?since=-5m")
	g.Expect(code).To(Equal(http.StatusBadRequest), body)
	g.Expect(body).To(ContainSubstring(`"field":"since"`))
	code, _ = a.do(http.MethodGet, "/ops/api/v1/upgradeOperations/no-such-op/events", "", nil)
	g.Expect(code).To(Equal(http.StatusNotFound))
}
