package backupschedule

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Phase is a ClusterBackup's phase as retention sees it.
type Phase string

// The phases retention tells apart (those of ClusterBackup).
const (
	Succeeded       Phase = "Succeeded"
	PartiallyFailed Phase = "PartiallyFailed"
	Failed          Phase = "Failed"
)

// Backup is one ClusterBackup of a schedule.
type Backup struct {
	Name string
	// Scheduled is the tick it was created for.
	Scheduled time.Time
	// Phase is its phase; anything but Succeeded, PartiallyFailed and
	// Failed is still running.
	Phase Phase
}

func (b Backup) terminal() bool {
	return b.Phase == Succeeded || b.Phase == PartiallyFailed || b.Phase == Failed
}

// Policy is a schedule's retention; nil fields are unset.
type Policy struct {
	KeepLast *int32
	KeepDays *int32
}

// Deletion is a backup retention deletes, and why.
type Deletion struct {
	Name   string
	Reason string
}

// Decision is what retention keeps and deletes.
type Decision struct {
	// Keep are the backups kept, newest first.
	Keep []string
	// Delete are the backups to delete, oldest first.
	Delete []Deletion
}

// Retain decides which backups of a schedule are kept. The rules
// (docs/backups.md, "Retention"):
//
//   - a backup still running is kept;
//   - the newest Succeeded backup is always kept;
//   - another Succeeded backup is kept when keepLast keeps it (it is one of
//     the newest keepLast Succeeded backups) or keepDays does (it was
//     scheduled less than keepDays days before now);
//   - a Failed or PartiallyFailed backup is kept only while no newer
//     backup Succeeded, and only the newest max(keepLast, 1) of those;
//     it never counts towards keepLast.
//
// It is pure: the same input gives the same decision.
func Retain(backups []Backup, p Policy, now time.Time) Decision {
	sorted := append([]Backup(nil), backups...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if !sorted[i].Scheduled.Equal(sorted[j].Scheduled) {
			return sorted[i].Scheduled.After(sorted[j].Scheduled)
		}
		return sorted[i].Name > sorted[j].Name
	})
	keepFailed := 1
	if p.KeepLast != nil && *p.KeepLast > 1 {
		keepFailed = int(*p.KeepLast)
	}
	var d Decision
	var newestOK string
	succeeded, failed := 0, 0
	for _, b := range sorted {
		switch {
		case !b.terminal():
			d.Keep = append(d.Keep, b.Name)
		case b.Phase == Succeeded:
			succeeded++
			if reason, del := expired(b, succeeded, p, now); del {
				d.Delete = append(d.Delete, Deletion{Name: b.Name, Reason: reason})
			} else {
				d.Keep = append(d.Keep, b.Name)
			}
			if newestOK == "" {
				newestOK = b.Name
			}
		default:
			failed++
			switch {
			case newestOK != "":
				d.Delete = append(d.Delete, Deletion{Name: b.Name, Reason: fmt.Sprintf("%s, and the newer backup %s Succeeded", b.Phase, newestOK)})
			case failed > keepFailed:
				d.Delete = append(d.Delete, Deletion{Name: b.Name, Reason: fmt.Sprintf("%s, and %d newer backups failed too (only the newest %d failed backups are kept)", b.Phase, failed-1, keepFailed)})
			default:
				d.Keep = append(d.Keep, b.Name)
			}
		}
	}
	// Oldest first: the oldest data goes first.
	for i, j := 0, len(d.Delete)-1; i < j; i, j = i+1, j-1 {
		d.Delete[i], d.Delete[j] = d.Delete[j], d.Delete[i]
	}
	return d
}

// expired says whether the n-th newest Succeeded backup b (n from 1) is
// beyond every rule that could keep it, and why.
func expired(b Backup, n int, p Policy, now time.Time) (string, bool) {
	if n == 1 {
		return "", false
	}
	var why []string
	if p.KeepLast != nil {
		if n <= int(*p.KeepLast) {
			return "", false
		}
		why = append(why, fmt.Sprintf("not one of the newest keepLast=%d Succeeded backups", *p.KeepLast))
	}
	if p.KeepDays != nil {
		if now.Sub(b.Scheduled) < time.Duration(*p.KeepDays)*24*time.Hour {
			return "", false
		}
		why = append(why, fmt.Sprintf("scheduled %s, more than keepDays=%d days ago", b.Scheduled.UTC().Format(time.RFC3339), *p.KeepDays))
	}
	if len(why) == 0 {
		// No rule at all (the CRD requires one): keep everything.
		return "", false
	}
	return strings.Join(why, " and "), true
}
