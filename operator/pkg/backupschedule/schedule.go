// Package backupschedule holds the pure decisions of a
// ClusterBackupSchedule, shared by ops-apiserver (request validation) and
// ops-operator (the reconciler): parsing the cron expression, the tick a
// backup is due for, and which backups retention keeps.
package backupschedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MinInterval is the shortest interval of an @every descriptor.
const MinInterval = time.Minute

// parser accepts the standard five fields and the descriptors (@hourly,
// @every 1h, ...); no seconds field.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Schedule is a parsed cron expression, in UTC.
type Schedule struct {
	s cron.Schedule
}

// Parse parses a schedule expression: five cron fields in UTC or a
// descriptor. A time zone prefix (TZ=, CRON_TZ=) is refused: schedules
// are UTC, so that a tick never happens twice or not at all around a
// daylight saving change.
func Parse(expr string) (Schedule, error) {
	e := strings.TrimSpace(expr)
	switch {
	case e == "":
		return Schedule{}, errors.New("must not be empty")
	case strings.HasPrefix(e, "TZ=") || strings.HasPrefix(e, "CRON_TZ="):
		return Schedule{}, errors.New("must not name a time zone: schedules are in UTC")
	}
	s, err := parser.Parse(e)
	if err != nil {
		return Schedule{}, fmt.Errorf("is not a valid cron expression (five fields: minute hour day-of-month month day-of-week, e.g. \"0 3 * * *\", or @hourly, @daily, @weekly, @monthly, @every <duration>): %w", err)
	}
	if every, ok := s.(cron.ConstantDelaySchedule); ok && every.Delay < MinInterval {
		return Schedule{}, fmt.Errorf("@every must be at least %s", MinInterval)
	}
	return Schedule{s: s}, nil
}

// Next is the first tick after t.
func (s Schedule) Next(t time.Time) time.Time {
	return s.s.Next(t.UTC())
}

// Due is the latest tick in (after, now], and whether there is one: the
// tick a backup is due for. Ticks missed before it (the operator was down)
// are skipped: one backup catches up for all of them.
func (s Schedule) Due(after, now time.Time) (time.Time, bool) {
	after, now = after.UTC(), now.UTC()
	if !now.After(after) {
		return time.Time{}, false
	}
	// Look back from now in growing windows, so a schedule ticking every
	// minute does not walk years of ticks after a long outage.
	for w := time.Hour; ; w *= 2 {
		start := now.Add(-w)
		if !start.After(after) {
			start = after
		}
		if t, ok := s.lastIn(start, now); ok {
			return t, true
		}
		if start.Equal(after) {
			return time.Time{}, false
		}
	}
}

// lastIn is the latest tick in (start, end].
func (s Schedule) lastIn(start, end time.Time) (time.Time, bool) {
	var last time.Time
	found := false
	for t := s.Next(start); !t.IsZero() && !t.After(end); t = s.Next(t) {
		last, found = t, true
	}
	return last, found
}
