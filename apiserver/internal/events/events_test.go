package events

import (
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
)

func TestParse(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
	q, err := Parse(url.Values{"since": {"30m"}, "type": {"Warning"}, "reason": {"BackOff"}}, now)
	g.Expect(err).To(BeNil())
	g.Expect(q.Since).To(Equal(now.Add(-30 * time.Minute)))
	g.Expect(q.Type).To(Equal("Warning"))
	g.Expect(q.PageSize).To(Equal(listing.DefaultPageSize))
	q, err = Parse(url.Values{"since": {"2026-01-02T14:00:00Z"}, "page_size": {"7"}}, now)
	g.Expect(err).To(BeNil())
	g.Expect(q.Since).To(Equal(now.Add(-time.Hour)))
	g.Expect(q.PageSize).To(Equal(7))

	for _, since := range []string{"-5m", "0s", "9000h", "yesterday", "2026-01-02"} {
		_, err = Parse(url.Values{"since": {since}}, now)
		g.Expect(err).NotTo(BeNil(), since)
		g.Expect(err.Violations).To(HaveLen(1), since)
	}
	_, err = Parse(url.Values{"type": {"Error"}, "reason": {"a,b"}, "page_size": {"x"}, "page_token": {"nope"}}, now)
	g.Expect(err).NotTo(BeNil())
	g.Expect(err.Violations).To(HaveLen(4))
}

func TestWhenAndOrder(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
	e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0)}}
	g.Expect(When(e)).To(Equal(t0))
	e.LastTimestamp = metav1.NewTime(t0.Add(time.Minute))
	g.Expect(When(e)).To(Equal(t0.Add(time.Minute)))
	e.EventTime = metav1.NewMicroTime(t0.Add(2 * time.Minute))
	g.Expect(When(e)).To(Equal(t0.Add(2 * time.Minute)))

	newer, older := item{time: "2026-01-02T15:01:00Z", key: "a"}, item{time: "2026-01-02T15:00:00Z", key: "z"}
	g.Expect(newestFirst(newer, older)).To(BeNumerically("<", 0))
	g.Expect(newestFirst(older, newer)).To(BeNumerically(">", 0))
	g.Expect(newestFirst(item{time: newer.time, key: "b"}, newer)).To(BeNumerically("<", 0), "ties: by key, descending")
	v := View(e)
	g.Expect(v.Count).To(BeEquivalentTo(1))
	g.Expect(v.Time).To(Equal("2026-01-02T15:02:00Z"))
}
