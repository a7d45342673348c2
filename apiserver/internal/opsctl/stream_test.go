package opsctl

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

// TestWatchFollowsTheStream: `upgrades watch` takes the states from the
// upgrade operations' watch stream (not from polls: the GET answers
// Pending forever), skips the other operations' events, and sends the
// token on the stream too.
func TestWatchFollowsTheStream(t *testing.T) {
	g := NewWithT(t)
	op := func(id, phase, step string) string {
		return fmt.Sprintf(`{"id":%q,"name":"upgrade-%s","phase":%q,"createTime":"2026-01-02T15:03:05Z","spec":{"k8sClusterName":"dev","targetVersion":"1.30"},"steps":[{"id":"controlplane/Upgrade","phase":%q}]}`, id, id, phase, step)
	}
	var mu sync.Mutex
	var streamAuth, streamAccept []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/ops/api/v1/upgradeOperations/u-1":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, op("u-1", "Pending", "Pending"))
		case r.URL.Path == "/ops/api/v1/upgradeOperations" && r.URL.Query().Get("watch") == "true":
			mu.Lock()
			streamAuth = append(streamAuth, r.Header.Get("Authorization"))
			streamAccept = append(streamAccept, r.Header.Get("Accept"))
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			for i, ev := range []string{
				"event: ADDED\ndata: " + op("u-2", "Running", "Running"),
				"event: ADDED\ndata: " + op("u-1", "Pending", "Pending"),
				"event: SYNCED\ndata: {\"resourceVersion\":\"12\",\"complete\":true}",
				"event: MODIFIED\ndata: " + op("u-1", "Running", "Running"),
				"event: MODIFIED\ndata: " + op("u-2", "Failed", "Failed"),
				"event: MODIFIED\ndata: " + op("u-1", "Succeeded", "Succeeded"),
			} {
				fmt.Fprintf(w, "id: %d\n%s\n\n", 10+i, ev)
			}
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	code, out, errOut := run(t, nil, false, "upgrades", "watch", "u-1", "--server", srv.URL, "--token", "s3cret")
	g.Expect(code).To(Equal(0), "stdout:\n%s\nstderr:\n%s", out, errOut)
	g.Expect(out).To(ContainSubstring("step controlplane/Upgrade  Running"))
	g.Expect(out).To(ContainSubstring("upgrade operation upgrade-u-1 Succeeded"))
	g.Expect(out).NotTo(ContainSubstring("upgrade-u-2"), "another operation's events are not shown")
	mu.Lock()
	defer mu.Unlock()
	g.Expect(streamAuth).To(ConsistOf("Bearer s3cret"))
	g.Expect(streamAccept).To(ConsistOf("text/event-stream"))
}

// TestWatchPollsAServerWithoutStream: a server that refuses ?watch=true
// (an older ops-apiserver) is polled instead.
func TestWatchPollsAServerWithoutStream(t *testing.T) {
	g := NewWithT(t)
	f, server := newFake(t, map[string][]response{"GET /ops/api/v1/upgradeOperations/u-1": states("Succeeded")})
	code, out, errOut := run(t, nil, false, "upgrades", "watch", "u-1", "--server", server)
	g.Expect(code).To(Equal(0), "stdout:\n%s\nstderr:\n%s", out, errOut)
	g.Expect(out).To(ContainSubstring("upgrade operation upgrade-x Succeeded"))
	f.mu.Lock()
	defer f.mu.Unlock()
	var tried bool
	for _, r := range f.requests {
		tried = tried || strings.HasPrefix(r.uri, "/ops/api/v1/upgradeOperations?watch=true")
	}
	g.Expect(tried).To(BeTrue(), "the stream is tried first")
}
