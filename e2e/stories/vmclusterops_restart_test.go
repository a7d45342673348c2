package stories

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/e2e/suite"
)

// storyRollingRestart: a Restart of vmstorage restarts each of its 3 Pods
// exactly once, one at a time (never more than one vmstorage Pod missing
// or not Ready), with ops-operator killed in the middle and the operation
// paused and resumed; a second Restart cancelled in the middle stops after
// the step in flight and says what was done.
func storyRollingRestart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name = "restarts"
	base := suite.VMClusters + "/" + name
	code, body := suite.Call(t, http.MethodPost, suite.VMClusters, map[string]any{
		"name": name, "values": map[string]any{"vmstorage": map[string]any{"replicaCount": 3}},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	t.Cleanup(func() { suite.Call(t, http.MethodDelete, base, nil) })
	suite.WaitVMCluster(t, name, "RUNNING", 3*time.Minute)
	g.Eventually(func(g Gomega) { stsReady(g, "vmstorage-"+name, 3) }, 3*time.Minute, time.Second).Should(Succeed())

	// uids records every UID seen per Pod name; worst is the most vmstorage
	// Pods seen missing or not Ready at once.
	uids := map[string]map[string]bool{}
	worst := 0
	observe := func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(st.Env.Client.List(ctx, pods, client.InNamespace(obs),
			client.MatchingLabels{"app.kubernetes.io/name": "vmstorage", "app.kubernetes.io/instance": name})).To(Succeed())
		ready := 0
		for _, p := range pods.Items {
			if uids[p.Name] == nil {
				uids[p.Name] = map[string]bool{}
			}
			uids[p.Name][string(p.UID)] = true
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					ready++
				}
			}
		}
		worst = max(worst, 3-ready)
	}
	observe(g)

	restart := map[string]any{"type": "Restart", "restart": map[string]any{"components": []any{"vmstorage"}}}
	code, body = suite.Call(t, http.MethodPost, base+"/operations", restart)
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	id := body["id"].(string)
	get := func(g Gomega) map[string]any {
		code, b := suite.Call(t, http.MethodGet, base+"/operations/"+id, nil)
		g.Expect(code).To(Equal(http.StatusOK), "%v", b)
		return b
	}
	stepOf := func(op map[string]any, i int) map[string]any {
		steps, _ := op["steps"].([]any)
		if i >= len(steps) {
			return map[string]any{}
		}
		return steps[i].(map[string]any)
	}

	// Kill ops-operator once the first Pod was evicted, then start it again.
	g.Eventually(func(g Gomega) {
		observe(g)
		g.Expect(fmt.Sprint(stepOf(get(g), 0)["message"])).To(ContainSubstring("Evicted"))
	}, 3*time.Minute, 100*time.Millisecond).Should(Succeed())
	st.StopOperator()
	g.Expect(st.StartOperator(ctx)).To(Succeed())

	// Pause while the second Pod restarts: that step finishes, the third
	// does not start.
	g.Eventually(func(g Gomega) {
		observe(g)
		g.Expect(stepOf(get(g), 1)["phase"]).To(Equal("Running"))
	}, 3*time.Minute, 100*time.Millisecond).Should(Succeed())
	code, body = suite.Call(t, http.MethodPut, base+"/operations/"+id+"/pause", nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", body)
	g.Eventually(func(g Gomega) {
		observe(g)
		op := get(g)
		g.Expect(op["phase"]).To(Equal("Paused"), "%v", op["message"])
		g.Expect(op["progress"]).To(Equal("2/3"))
		g.Expect(stepOf(op, 2)["phase"]).To(Equal("Pending"))
	}, 3*time.Minute, 100*time.Millisecond).Should(Succeed())
	code, body = suite.Call(t, http.MethodPut, base+"/operations/"+id+"/resume", nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", body)
	var done map[string]any
	g.Eventually(func(g Gomega) {
		observe(g)
		done = get(g)
		g.Expect(done["phase"]).To(Equal("Succeeded"), "%v", done["message"])
	}, 5*time.Minute, 100*time.Millisecond).Should(Succeed())
	observe(g)

	g.Expect(worst).To(BeNumerically("<=", 1), "never more than one vmstorage Pod down at once")
	var prevEnd time.Time
	for i := range 3 {
		s := stepOf(done, i)
		pod := fmt.Sprint(s["pod"])
		g.Expect(pod).To(Equal(fmt.Sprintf("vmstorage-%s-%d", name, i)))
		g.Expect(uids[pod]).To(HaveLen(2), "Pod %s restarted exactly once (UIDs seen: %v)", pod, uids[pod])
		start, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(s["start_time"]))
		end, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(s["completion_time"]))
		g.Expect(start).NotTo(BeTemporally("<", prevEnd), "one Pod at a time")
		prevEnd = end
	}
	evicted := map[string]int{}
	events := &eventsv1.EventList{}
	g.Expect(st.Env.Client.List(ctx, events, client.InNamespace(obs))).To(Succeed())
	opName := done["name"].(string)[strings.LastIndex(done["name"].(string), "/")+1:]
	for _, e := range events.Items {
		if e.Regarding.Name == opName && e.Reason == "PodRestarted" {
			for i := range 3 {
				if p := fmt.Sprintf("vmstorage-%s-%d ", name, i); strings.Contains(e.Note, p) {
					evicted[p] += max(int(e.DeprecatedCount), 1)
				}
			}
		}
	}
	for p, n := range evicted {
		g.Expect(n).To(Equal(1), "Pod %s evicted once", p)
	}

	// Cancel in the middle: the step in flight finishes, the rest is
	// Skipped, and the message says what was done.
	code, body = suite.Call(t, http.MethodPost, base+"/operations", restart)
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	id = body["id"].(string)
	g.Eventually(func(g Gomega) { g.Expect(stepOf(get(g), 0)["phase"]).To(Equal("Running")) }, 3*time.Minute, 100*time.Millisecond).Should(Succeed())
	code, body = suite.Call(t, http.MethodDelete, base+"/operations/"+id, nil)
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	g.Eventually(func(g Gomega) {
		op := get(g)
		g.Expect(op["phase"]).To(Equal("Cancelled"), "%v", op["message"])
		g.Expect(stepOf(op, 0)["phase"]).To(Equal("Succeeded"))
		g.Expect(stepOf(op, 2)["phase"]).To(Equal("Skipped"))
		g.Expect(op["message"]).To(ContainSubstring("done: restart vmstorage-" + name + "-0"))
	}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) { stsReady(g, "vmstorage-"+name, 3) }, 2*time.Minute, time.Second).Should(Succeed())
}
