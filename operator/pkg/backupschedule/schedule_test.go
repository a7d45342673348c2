package backupschedule

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, expr, err string
	}{
		{name: "five fields", expr: "0 3 * * *"},
		{name: "every minute", expr: "* * * * *"},
		{name: "descriptor", expr: "@daily"},
		{name: "every hour", expr: "@every 1h"},
		{name: "empty", expr: " ", err: "must not be empty"},
		{name: "seconds field", expr: "0 0 3 * * *", err: "not a valid cron expression"},
		{name: "garbage", expr: "every day", err: "not a valid cron expression"},
		{name: "minute out of range", expr: "61 * * * *", err: "not a valid cron expression"},
		{name: "time zone", expr: "CRON_TZ=Europe/Paris 0 3 * * *", err: "UTC"},
		{name: "too often", expr: "@every 30s", err: "at least 1m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Parse(tc.expr)
			if tc.err == "" {
				g.Expect(err).NotTo(HaveOccurred())
			} else {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
			}
		})
	}
}

func TestDue(t *testing.T) {
	daily, _ := Parse("0 3 * * *")
	minutely, _ := Parse("* * * * *")
	for _, tc := range []struct {
		name       string
		s          Schedule
		after, now string
		want       string // "" none
	}{
		{name: "not yet", s: daily, after: "2026-01-01T03:00:00Z", now: "2026-01-02T02:59:59Z"},
		{name: "exactly at the tick", s: daily, after: "2026-01-01T03:00:00Z", now: "2026-01-02T03:00:00Z", want: "2026-01-02T03:00:00Z"},
		{name: "the tick already done", s: daily, after: "2026-01-02T03:00:00Z", now: "2026-01-02T03:00:30Z"},
		{name: "missed ticks: only the latest", s: daily, after: "2026-01-01T03:00:00Z", now: "2026-01-05T04:00:00Z", want: "2026-01-05T03:00:00Z"},
		{name: "years down, every minute", s: minutely, after: "2020-01-01T00:00:00Z", now: "2026-01-05T04:00:30Z", want: "2026-01-05T04:00:00Z"},
		{name: "now before after", s: minutely, after: "2026-01-05T04:00:00Z", now: "2026-01-05T03:00:00Z"},
		{name: "long window without a tick", s: daily, after: "2026-01-01T03:00:00Z", now: "2026-01-01T23:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := tc.s.Due(at(tc.after), at(tc.now))
			if tc.want == "" {
				g.Expect(ok).To(BeFalse(), "%s", got)
				return
			}
			g.Expect(ok).To(BeTrue())
			g.Expect(got).To(Equal(at(tc.want)))
		})
	}
}

// FuzzDue: whatever the expression and the times, a due tick is in
// (after, now], and no later tick is.
func FuzzDue(f *testing.F) {
	f.Add("* * * * *", int64(0), int64(3600))
	f.Add("0 3 * * *", int64(1_700_000_000), int64(86_400*9))
	f.Add("@every 90m", int64(5), int64(100_000))
	f.Fuzz(func(t *testing.T, expr string, after, span int64) {
		s, err := Parse(expr)
		if err != nil {
			return
		}
		if after < 0 || after > 4_000_000_000 || span < 0 || span > 86_400*400 {
			return
		}
		a := time.Unix(after, 0).UTC()
		now := a.Add(time.Duration(span) * time.Second)
		got, ok := s.Due(a, now)
		if !ok {
			if n := s.Next(a); !n.IsZero() && !n.After(now) {
				t.Fatalf("no tick found, but %s is in (%s, %s]", n, a, now)
			}
			return
		}
		if !got.After(a) || got.After(now) {
			t.Fatalf("tick %s not in (%s, %s]", got, a, now)
		}
		if n := s.Next(got); !n.IsZero() && !n.After(now) {
			t.Fatalf("tick %s is not the latest: %s", got, n)
		}
	})
}
