package backupschedule

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func i32(v int32) *int32 { return &v }

func TestRetain(t *testing.T) {
	now := at("2026-03-10T12:00:00Z")
	day := func(d int) time.Time { return now.Add(-time.Duration(d) * 24 * time.Hour) }
	for _, tc := range []struct {
		name    string
		backups []Backup
		policy  Policy
		keep    []string
		del     map[string]string // name -> reason substring
	}{
		{
			name:    "keepLast keeps the newest",
			backups: []Backup{{"b1", day(3), Succeeded}, {"b2", day(2), Succeeded}, {"b3", day(1), Succeeded}},
			policy:  Policy{KeepLast: i32(2)},
			keep:    []string{"b3", "b2"},
			del:     map[string]string{"b1": "keepLast=2"},
		},
		{
			name:    "running backups are kept and do not count",
			backups: []Backup{{"b1", day(3), Succeeded}, {"b2", day(2), Succeeded}, {"b3", day(1), "Running"}},
			policy:  Policy{KeepLast: i32(1)},
			keep:    []string{"b3", "b2"},
			del:     map[string]string{"b1": "keepLast=1"},
		},
		{
			name:    "keepDays",
			backups: []Backup{{"old", day(8), Succeeded}, {"new", day(6), Succeeded}, {"newest", day(0), Succeeded}},
			policy:  Policy{KeepDays: i32(7)},
			keep:    []string{"newest", "new"},
			del:     map[string]string{"old": "keepDays=7"},
		},
		{
			name:    "the newest Succeeded backup survives keepDays",
			backups: []Backup{{"old", day(30), Succeeded}, {"older", day(31), Succeeded}},
			policy:  Policy{KeepDays: i32(7)},
			keep:    []string{"old"},
			del:     map[string]string{"older": "keepDays=7"},
		},
		{
			name:    "either rule keeps",
			backups: []Backup{{"a", day(10), Succeeded}, {"b", day(5), Succeeded}, {"c", day(4), Succeeded}, {"d", day(0), Succeeded}},
			policy:  Policy{KeepLast: i32(2), KeepDays: i32(7)},
			keep:    []string{"d", "c", "b"},
			del:     map[string]string{"a": "keepLast=2 Succeeded backups and scheduled"},
		},
		{
			name:    "failures before a success go",
			backups: []Backup{{"f1", day(3), Failed}, {"ok", day(2), Succeeded}, {"f2", day(1), PartiallyFailed}},
			policy:  Policy{KeepLast: i32(3)},
			keep:    []string{"f2", "ok"},
			del:     map[string]string{"f1": "newer backup ok Succeeded"},
		},
		{
			name:    "failures never push out successes",
			backups: []Backup{{"ok1", day(5), Succeeded}, {"ok2", day(4), Succeeded}, {"f1", day(3), Failed}, {"f2", day(2), Failed}, {"f3", day(1), Failed}},
			policy:  Policy{KeepLast: i32(2)},
			keep:    []string{"f3", "f2", "ok2", "ok1"},
			del:     map[string]string{"f1": "only the newest 2 failed backups"},
		},
		{
			name:    "nothing to do",
			backups: nil,
			policy:  Policy{KeepLast: i32(1)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d := Retain(tc.backups, tc.policy, now)
			g.Expect(d.Keep).To(Equal(tc.keep))
			g.Expect(d.Delete).To(HaveLen(len(tc.del)))
			for _, del := range d.Delete {
				g.Expect(tc.del).To(HaveKey(del.Name))
				g.Expect(del.Reason).To(ContainSubstring(tc.del[del.Name]))
			}
		})
	}
}

// FuzzRetain: every backup is kept or deleted, exactly once; running
// backups and the newest Succeeded one are always kept; with keepLast,
// at least min(keepLast, #Succeeded) Succeeded backups are kept.
func FuzzRetain(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0, 0}, int32(2), int32(0))
	f.Add([]byte{2, 2, 0, 4, 0}, int32(0), int32(3))
	f.Fuzz(func(t *testing.T, phases []byte, keepLast, keepDays int32) {
		now := at("2026-03-10T12:00:00Z")
		ph := []Phase{Succeeded, Failed, PartiallyFailed, "Running", ""}
		var bs []Backup
		for i, p := range phases {
			if i >= 64 {
				break
			}
			bs = append(bs, Backup{Name: string(rune('a'+i%26)) + string(rune('0'+i/26)), Scheduled: now.Add(-time.Duration(i) * 13 * time.Hour), Phase: ph[int(p)%len(ph)]})
		}
		var p Policy
		if keepLast > 0 && keepLast <= 1000 {
			p.KeepLast = &keepLast
		}
		if keepDays > 0 && keepDays <= 3650 {
			p.KeepDays = &keepDays
		}
		d := Retain(bs, p, now)
		seen := map[string]int{}
		for _, k := range d.Keep {
			seen[k]++
		}
		for _, del := range d.Delete {
			seen[del.Name]++
		}
		okKept, ok := 0, 0
		for i, b := range bs {
			if seen[b.Name] != 1 {
				t.Fatalf("backup %s decided %d times", b.Name, seen[b.Name])
			}
			kept := contains(d.Keep, b.Name)
			if !b.terminal() && !kept {
				t.Fatalf("running backup %s deleted", b.Name)
			}
			if b.Phase == Succeeded {
				ok++
				if kept {
					okKept++
				}
				if ok == 1 && !kept {
					t.Fatalf("newest Succeeded backup %s (index %d) deleted", b.Name, i)
				}
			}
		}
		if p.KeepLast != nil && okKept < min(int(*p.KeepLast), ok) {
			t.Fatalf("kept %d Succeeded backups, keepLast %d of %d", okKept, *p.KeepLast, ok)
		}
	})
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
