package v1alpha1

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMaintenanceWindowValidate(t *testing.T) {
	ok := MaintenanceWindow{Days: []Weekday{"Monday"}, Start: "02:00", Duration: "4h", TimeZone: "Europe/Berlin"}
	cases := []struct {
		name   string
		mutate func(*MaintenanceWindow)
		field  string
		words  string
	}{
		{"valid", func(*MaintenanceWindow) {}, "", ""},
		{"utc by default", func(w *MaintenanceWindow) { w.TimeZone = "" }, "", ""},
		{"hours and minutes", func(w *MaintenanceWindow) { w.Duration = "1h30m" }, "", ""},
		{"a full week", func(w *MaintenanceWindow) { w.Duration = "168h" }, "", ""},
		{"no days", func(w *MaintenanceWindow) { w.Days = nil }, "days", "at least one day"},
		{"not a day", func(w *MaintenanceWindow) { w.Days = []Weekday{"Mon"} }, "days", `"Mon" is not a day`},
		{"a day twice", func(w *MaintenanceWindow) { w.Days = []Weekday{"Monday", "Monday"} }, "days", "listed twice"},
		{"hour 24", func(w *MaintenanceWindow) { w.Start = "24:00" }, "start", "HH:MM"},
		{"no leading zero", func(w *MaintenanceWindow) { w.Start = "2:00" }, "start", "HH:MM"},
		{"more than a week", func(w *MaintenanceWindow) { w.Duration = "169h" }, "duration", "between 1m and 168h"},
		{"seconds", func(w *MaintenanceWindow) { w.Duration = "30s" }, "duration", "between 1m and 168h"},
		{"zero", func(w *MaintenanceWindow) { w.Duration = "0m" }, "duration", "between 1m and 168h"},
		{"unknown zone", func(w *MaintenanceWindow) { w.TimeZone = "Mars/Olympus_Mons" }, "timeZone", `unknown time zone "Mars/Olympus_Mons"`},
		{"a path", func(w *MaintenanceWindow) { w.TimeZone = "../../etc/passwd" }, "timeZone", "unknown time zone"},
		{"Local", func(w *MaintenanceWindow) { w.TimeZone = "Local" }, "timeZone", "unknown time zone"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := ok
			w.Days = append([]Weekday(nil), ok.Days...)
			tc.mutate(&w)
			v := w.Validate()
			if tc.field == "" {
				if len(v) != 0 {
					t.Fatalf("want valid, got %v", v)
				}
				return
			}
			if len(v) != 1 || v[0].Field != tc.field || !strings.Contains(v[0].Message, tc.words) {
				t.Fatalf("want one violation of %s containing %q, got %v", tc.field, tc.words, v)
			}
		})
	}
}

func TestMaintenanceWindowWindow(t *testing.T) {
	// 2026-12-05 is a Saturday; Berlin is UTC+1 in December, UTC+2 in July.
	berlin := MaintenanceWindow{Days: []Weekday{"Saturday", "Sunday"}, Start: "02:00", Duration: "4h", TimeZone: "Europe/Berlin"}
	weekLong := MaintenanceWindow{Days: []Weekday{"Wednesday"}, Start: "00:00", Duration: "168h"}
	lateNight := MaintenanceWindow{Days: []Weekday{"Friday"}, Start: "23:00", Duration: "3h"}
	cases := []struct {
		name     string
		w        MaintenanceWindow
		at       string
		inside   bool
		end      string
		nextOpen string
	}{
		{"before the first day", berlin, "2026-12-04T12:00:00Z", false, "", "2026-12-05T01:00:00Z"},
		{"at the opening", berlin, "2026-12-05T01:00:00Z", true, "2026-12-05T05:00:00Z", "2026-12-06T01:00:00Z"},
		{"inside", berlin, "2026-12-05T04:59:00Z", true, "2026-12-05T05:00:00Z", "2026-12-06T01:00:00Z"},
		{"at the close", berlin, "2026-12-05T05:00:00Z", false, "", "2026-12-06T01:00:00Z"},
		{"after the last day", berlin, "2026-12-06T06:00:00Z", false, "", "2026-12-12T01:00:00Z"},
		{"summer time", berlin, "2026-07-04T00:30:00Z", true, "2026-07-04T04:00:00Z", "2026-07-05T00:00:00Z"},
		{"always open", weekLong, "2026-12-07T12:00:00Z", true, "2026-12-09T00:00:00Z", "2026-12-09T00:00:00Z"},
		{"across midnight", lateNight, "2026-12-05T01:00:00Z", true, "2026-12-05T02:00:00Z", "2026-12-11T23:00:00Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inside, end, next, ok := tc.w.Window(mustTime(t, tc.at))
			if !ok {
				t.Fatal("window reported invalid")
			}
			if inside != tc.inside {
				t.Fatalf("inside = %v, want %v", inside, tc.inside)
			}
			if tc.inside && !end.Equal(mustTime(t, tc.end)) {
				t.Fatalf("end = %s, want %s", end.UTC(), tc.end)
			}
			if !next.Equal(mustTime(t, tc.nextOpen)) {
				t.Fatalf("next = %s, want %s", next.UTC(), tc.nextOpen)
			}
		})
	}
}

func TestGatesBefore(t *testing.T) {
	spec := ClusterUpgradeOperationSpec{
		ClusterAddons: []ClusterAddon{{Name: "coredns", Version: "v1"}},
		NodeGroupUpgrades: []NodeGroupUpgrade{
			{NodeGroupName: "a", Strategy: StrategyInPlace},
			{NodeGroupName: "b", Strategy: StrategyBlueGreen, NewNodeGroupName: "b2"},
		},
	}
	steps := []UpgradeStep{
		{ID: ControlPlaneStepID, Type: StepTypeControlPlane, Action: ActionUpgradeControlPlane},
		{ID: AddonStepID("coredns"), Type: StepTypeAddon, Action: ActionUpdateAddon, Target: "coredns"},
		{ID: NodeGroupStepID("a", ActionUpgradeNodeGroup), Type: StepTypeNodeGroup, Action: ActionUpgradeNodeGroup, Target: "a"},
		{ID: NodeGroupStepID("b", ActionCreateNodeGroup), Type: StepTypeNodeGroup, Action: ActionCreateNodeGroup, Target: "b2"},
		{ID: NodeGroupStepID("b", ActionWaitNodesReady), Type: StepTypeNodeGroup, Action: ActionWaitNodesReady, Target: "b2"},
		{ID: NodeGroupStepID("b", ActionCordonNodes), Type: StepTypeNodeGroup, Action: ActionCordonNodes, Target: "b"},
		{ID: NodeGroupStepID("b", ActionDrainNodes), Type: StepTypeNodeGroup, Action: ActionDrainNodes, Target: "b"},
		{ID: NodeGroupStepID("b", ActionDeleteNodeGroup), Type: StepTypeNodeGroup, Action: ActionDeleteNodeGroup, Target: "b"},
	}
	cases := []struct {
		name      string
		approvals []ApprovalGate
		want      map[int][]string
	}{
		{"none", nil, map[int][]string{}},
		{"before node groups", []ApprovalGate{GateBeforeNodeGroups}, map[int][]string{2: {"BeforeNodeGroups"}}},
		{"before each node group", []ApprovalGate{GateBeforeEachNodeGroup}, map[int][]string{2: {"BeforeEachNodeGroup/a"}, 3: {"BeforeEachNodeGroup/b"}}},
		{"before drain", []ApprovalGate{GateBeforeDrain}, map[int][]string{6: {"BeforeDrain/b"}}},
		{"all three", []ApprovalGate{GateBeforeDrain, GateBeforeNodeGroups, GateBeforeEachNodeGroup}, map[int][]string{
			2: {"BeforeNodeGroups", "BeforeEachNodeGroup/a"}, 3: {"BeforeEachNodeGroup/b"}, 6: {"BeforeDrain/b"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := spec
			s.Approvals = tc.approvals
			got := map[int][]string{}
			for i := range steps {
				if g := s.GatesBefore(steps, i); len(g) > 0 {
					got[i] = g
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("gates = %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzMaintenanceWindow: Validate never panics, and for a valid window
// Window answers consistently: an occurrence that contains t ends after
// it, the next one opens after it and within a week and a day.
func FuzzMaintenanceWindow(f *testing.F) {
	f.Add("Saturday", "02:00", "4h", "Europe/Berlin", int64(1796000000))
	f.Add("Monday", "23:59", "168h", "", int64(0))
	f.Add("Sunday", "24:00", "0m", "../x", int64(-1))
	f.Fuzz(func(t *testing.T, day, start, duration, tz string, unix int64) {
		w := MaintenanceWindow{Days: []Weekday{Weekday(day)}, Start: start, Duration: duration, TimeZone: tz}
		valid := len(w.Validate()) == 0
		at := time.Unix(unix%(1<<34), 0)
		inside, end, next, ok := w.Window(at)
		if ok != valid {
			t.Fatalf("Window ok=%v, Validate valid=%v", ok, valid)
		}
		if !ok {
			return
		}
		if inside && !end.After(at) {
			t.Fatalf("inside, but the occurrence ended at %s <= %s", end, at)
		}
		if !next.After(at) || next.Sub(at) > 8*24*time.Hour {
			t.Fatalf("next opening %s is not within 8 days after %s", next, at)
		}
	})
}
