package stories

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/e2e/stack"
	"github.com/tidbcloud/ops-server/e2e/suite"
)

// storyScaling: a vmcluster with replicationFactor 2 and 3 vmstorage
// replicas is scaled to 5 and back down to 2 by VMClusterOperations
// through the REST API. Each vmstorage step is one replica; the steps'
// timestamps in status show they ran one after another, in the planned
// order. A target below replicationFactor is refused naming its field, and
// so is 5 → 2 (it removes 3 replicas, replicationFactor or more, in one
// operation) until acknowledge_replication_risk is set. The 10,000 samples
// written at 3 replicas are all still readable at the end (every sample
// had a copy on vmstorage-0 or -1, the replicas that remain).
func storyScaling(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name = "scaling"
	base := suite.VMClusters + "/" + name
	code, body := suite.Call(t, http.MethodPost, suite.VMClusters, map[string]any{
		"name": name, "values": map[string]any{"replicationFactor": 2, "vmstorage": map[string]any{"replicaCount": 3}},
	})
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	t.Cleanup(func() { suite.Call(t, http.MethodDelete, base, nil) })
	running := suite.WaitVMCluster(t, name, "RUNNING", 3*time.Minute)
	g.Eventually(func(g Gomega) { stsReady(g, "vmstorage-"+name, 3) }, 3*time.Minute, time.Second).Should(Succeed())
	remoteWrite, _ := suite.Field(running, "endpoints.remote_write").(string)
	prometheus, _ := suite.Field(running, "endpoints.prometheus").(string)
	now := time.Now()
	g.Eventually(func() error {
		return stackWrite(ctx, remoteWrite, now)
	}, 2*time.Minute, time.Second).Should(Succeed())
	g.Eventually(func() (int, error) { return distinctSamples(ctx, prometheus) }, 2*time.Minute, time.Second).Should(Equal(10000))

	// Below replicationFactor: refused, naming the field.
	code, body = suite.Call(t, http.MethodPost, base+"/operations", map[string]any{"type": "HorizontalScaling", "horizontal_scaling": map[string]any{"vmstorage": 1}})
	g.Expect(code).To(Equal(http.StatusBadRequest), "%v", body)
	g.Expect(fmt.Sprint(body)).To(ContainSubstring("horizontal_scaling.vmstorage"))

	up := runOperation(t, base, map[string]any{"type": "HorizontalScaling", "horizontal_scaling": map[string]any{"vmstorage": 5}})
	expectSteps(t, up, "vmstorage 3>4", "vmstorage 4>5")
	g.Eventually(func(g Gomega) { stsReady(g, "vmstorage-"+name, 5) }, time.Minute, time.Second).Should(Succeed())

	// Removing replicationFactor or more replicas at once: refused
	// without the acknowledgement.
	code, body = suite.Call(t, http.MethodPost, base+"/operations", map[string]any{"type": "HorizontalScaling", "horizontal_scaling": map[string]any{"vmstorage": 2}})
	g.Expect(code).To(Equal(http.StatusBadRequest), "%v", body)
	g.Expect(fmt.Sprint(body)).To(And(ContainSubstring("horizontal_scaling.vmstorage"), ContainSubstring("removes 3 replicas in one operation")))
	down := runOperation(t, base, map[string]any{"type": "HorizontalScaling", "horizontal_scaling": map[string]any{"vmstorage": 2}, "acknowledge_replication_risk": true})
	expectSteps(t, down, "vmstorage 5>4", "vmstorage 4>3", "vmstorage 3>2")
	g.Eventually(func(g Gomega) { stsReady(g, "vmstorage-"+name, 2) }, time.Minute, time.Second).Should(Succeed())
	after := suite.WaitVMCluster(t, name, "RUNNING", time.Minute)
	g.Expect(suite.Field(after, "values.vmstorage.replicaCount")).To(BeEquivalentTo(2), "the vmcluster's values show the result")

	g.Eventually(func() (int, error) { return distinctSamples(ctx, prometheus) }, 2*time.Minute, time.Second).Should(Equal(10000))
}

// stackWrite writes 100 series × 100 samples of opsdata_story.
func stackWrite(ctx context.Context, remoteWrite string, now time.Time) error {
	return stack.WriteSamples(ctx, stack.ImportURL(remoteWrite), "opsdata_story", 100, 100, now)
}

// runOperation POSTs an operation and waits for it to succeed.
func runOperation(t *testing.T, base string, req map[string]any) map[string]any {
	t.Helper()
	g := NewWithT(t)
	code, body := suite.Call(t, http.MethodPost, base+"/operations", req)
	g.Expect(code).To(Equal(http.StatusAccepted), "%v", body)
	id, _ := body["id"].(string)
	var last map[string]any
	g.Eventually(func(g Gomega) {
		code, b := suite.Call(t, http.MethodGet, base+"/operations/"+id, nil)
		last = b
		g.Expect(code).To(Equal(http.StatusOK))
		g.Expect(b["phase"]).To(Equal("Succeeded"), "message=%v steps=%v", b["message"], b["steps"])
	}, 10*time.Minute, time.Second).Should(Succeed())
	return last
}

// expectSteps checks the steps ran in the planned order, each after the
// previous one finished.
func expectSteps(t *testing.T, op map[string]any, want ...string) {
	t.Helper()
	g := NewWithT(t)
	steps, _ := op["steps"].([]any)
	var got []string
	var prevEnd time.Time
	for _, s := range steps {
		m := s.(map[string]any)
		got = append(got, fmt.Sprintf("%v %v>%v", m["component"], m["from"], m["to"]))
		g.Expect(m["phase"]).To(Equal("Succeeded"))
		start, err := time.Parse(time.RFC3339Nano, m["start_time"].(string))
		g.Expect(err).NotTo(HaveOccurred())
		end, err := time.Parse(time.RFC3339Nano, m["completion_time"].(string))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(start).NotTo(BeTemporally("<", prevEnd), "step %v started before the previous one finished", m["id"])
		prevEnd = end
	}
	g.Expect(got).To(Equal(want))
}

// distinctSamples exports opsdata_story from the vmcluster and counts the
// distinct (series, timestamp) pairs: replicated copies from several
// vmstorage nodes count once.
func distinctSamples(ctx context.Context, prometheus string) (int, error) {
	u := prometheus + "/api/v1/export?" + url.Values{"match[]": {"opsdata_story"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var line struct {
			Metric     map[string]string `json:"metric"`
			Timestamps []int64           `json:"timestamps"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return 0, err
		}
		for _, ts := range line.Timestamps {
			seen[fmt.Sprintf("%s/%d", line.Metric["series"], ts)] = true
		}
	}
	return len(seen), sc.Err()
}
