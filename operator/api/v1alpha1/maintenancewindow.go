/*
Copyright 2026 The ops-server Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	"fmt"
	"time"
	// Time zones from the binary itself: the images carry no zoneinfo.
	_ "time/tzdata"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Weekday is a day of the week of a maintenance window.
// +kubebuilder:validation:Enum=Monday;Tuesday;Wednesday;Thursday;Friday;Saturday;Sunday
type Weekday string

// MaxMaintenanceWindowDuration is the longest duration of one window: a
// week (a window of 168h on one day is always open).
const MaxMaintenanceWindowDuration = 7 * 24 * time.Hour

// MaintenanceWindowDurationRule is the refusal of a duration out of range,
// in the words of the CRD's CEL rule, the REST API and the operator.
const MaintenanceWindowDurationRule = "maintenanceWindow.duration must be between 1m and 168h (7 days)"

// MaintenanceWindowTimeZoneRule is the refusal of a time zone the binary
// does not know (the CRD cannot check it: the REST API refuses it, the
// operator's preflight fails the operation), followed by the name.
const MaintenanceWindowTimeZoneRule = "maintenanceWindow.timeZone: unknown time zone"

// MaintenanceWindow is a recurring weekly window in a time zone, the model
// of GKE's recurring maintenance windows and Gardener's maintenance time
// window: on each of days, from start (local time in timeZone) for
// duration. A step that changes the cluster starts only inside a window;
// a step already running finishes. (An RRULE would say more — monthly
// windows, exceptions — and is refused here for being harder to read and to
// check; weekly windows cover the clouds' own models.)
//
// +kubebuilder:validation:XValidation:rule="duration(self.duration) >= duration('1m') && duration(self.duration) <= duration('168h')",message="maintenanceWindow.duration must be between 1m and 168h (7 days)",fieldPath=".duration"
type MaintenanceWindow struct {
	// Days are the days of the week a window starts on (Monday … Sunday),
	// in timeZone.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=7
	Days []Weekday `json:"days"`

	// Start is the local time the window opens, HH:MM on a 24-hour clock
	// (e.g. 02:00).
	// +required
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	Start string `json:"start"`

	// Duration is how long the window stays open, in hours and minutes
	// (4h, 90m, 1h30m): at least 1m, at most 168h (7 days).
	// +required
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=12
	// +kubebuilder:validation:Pattern=`^([0-9]{1,3}h)?([0-9]{1,5}m)?$`
	Duration string `json:"duration"`

	// TimeZone is the IANA time zone of days and start (e.g.
	// Europe/Berlin, America/New_York). Omitted: UTC. A name the operator
	// does not know fails the operation before any change (reason
	// InvalidSpec); the REST API refuses it with the same words.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$`
	TimeZone string `json:"timeZone,omitempty"`
}

var weekdays = map[Weekday]time.Weekday{
	"Sunday": time.Sunday, "Monday": time.Monday, "Tuesday": time.Tuesday, "Wednesday": time.Wednesday,
	"Thursday": time.Thursday, "Friday": time.Friday, "Saturday": time.Saturday,
}

// MaintenanceWindowViolation is one problem of a window: the field (below
// maintenanceWindow) and what is wrong, in the words the REST API, the
// CRD and the operator use.
type MaintenanceWindowViolation struct {
	Field   string
	Message string
}

// Validate returns what is wrong with the window: every rule the CRD
// checks, and the one it cannot (a time zone the binary knows). The
// REST API and the operator's preflight use it.
func (w *MaintenanceWindow) Validate() []MaintenanceWindowViolation {
	var out []MaintenanceWindowViolation
	if len(w.Days) == 0 {
		out = append(out, MaintenanceWindowViolation{"days", "maintenanceWindow.days must name at least one day"})
	}
	seen := map[Weekday]bool{}
	for _, d := range w.Days {
		if _, ok := weekdays[d]; !ok {
			out = append(out, MaintenanceWindowViolation{"days", fmt.Sprintf("maintenanceWindow.days: %q is not a day (Monday … Sunday)", d)})
		} else if seen[d] {
			out = append(out, MaintenanceWindowViolation{"days", fmt.Sprintf("maintenanceWindow.days: %s is listed twice", d)})
		}
		seen[d] = true
	}
	if _, _, ok := parseClock(w.Start); !ok {
		out = append(out, MaintenanceWindowViolation{"start", "maintenanceWindow.start must be HH:MM on a 24-hour clock, e.g. 02:00"})
	}
	if d, err := w.parseDuration(); err != nil || d < time.Minute || d > MaxMaintenanceWindowDuration {
		out = append(out, MaintenanceWindowViolation{"duration", MaintenanceWindowDurationRule})
	}
	if _, err := w.location(); err != nil {
		out = append(out, MaintenanceWindowViolation{"timeZone", fmt.Sprintf("%s %q (use an IANA name such as Europe/Berlin)", MaintenanceWindowTimeZoneRule, w.TimeZone)})
	}
	return out
}

func (w *MaintenanceWindow) parseDuration() (time.Duration, error) {
	if len(w.Duration) < 2 || w.Duration[len(w.Duration)-1] != 'h' && w.Duration[len(w.Duration)-1] != 'm' {
		return 0, fmt.Errorf("duration %q is not hours and minutes", w.Duration)
	}
	return time.ParseDuration(w.Duration)
}

func (w *MaintenanceWindow) location() (*time.Location, error) {
	if w.TimeZone == "" || w.TimeZone == "UTC" {
		return time.UTC, nil
	}
	// LoadLocation also opens a path: only IANA-shaped names reach it.
	for _, c := range w.TimeZone {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '+' || c == '-' || c == '/') {
			return nil, fmt.Errorf("unknown time zone %q", w.TimeZone)
		}
	}
	if w.TimeZone == "Local" || w.TimeZone[0] == '/' {
		return nil, fmt.Errorf("unknown time zone %q", w.TimeZone)
	}
	return time.LoadLocation(w.TimeZone)
}

func parseClock(s string) (hour, minute int, ok bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, 0, false
	}
	for _, i := range []int{0, 1, 3, 4} {
		if s[i] < '0' || s[i] > '9' {
			return 0, 0, false
		}
	}
	hour, minute = int(s[0]-'0')*10+int(s[1]-'0'), int(s[3]-'0')*10+int(s[4]-'0')
	return hour, minute, hour < 24 && minute < 60
}

// Window answers, for a valid window, whether t is inside one of its
// occurrences — then end is when that occurrence closes (the latest, when
// occurrences overlap) — or else when the next one opens. An invalid
// window answers ok=false.
func (w *MaintenanceWindow) Window(t time.Time) (inside bool, end, next time.Time, ok bool) {
	if len(w.Validate()) > 0 {
		return false, time.Time{}, time.Time{}, false
	}
	loc, _ := w.location()
	d, _ := w.parseDuration()
	hour, minute, _ := parseClock(w.Start)
	days := map[time.Weekday]bool{}
	for _, day := range w.Days {
		days[weekdays[day]] = true
	}
	local := t.In(loc)
	y, m, dd := local.Date()
	// An occurrence that contains t started at most 7 days before it; the
	// next one starts within 7 days after it.
	for i := -8; i <= 8; i++ {
		start := time.Date(y, m, dd+i, hour, minute, 0, 0, loc)
		if !days[start.Weekday()] {
			continue
		}
		stop := start.Add(d)
		if !t.Before(start) && t.Before(stop) {
			if !inside || stop.After(end) {
				end = stop
			}
			inside = true
		}
		if start.After(t) && (next.IsZero() || start.Before(next)) {
			next = start
		}
	}
	return inside, end, next, true
}

// Equal reports whether two windows are the same.
func (w *MaintenanceWindow) Equal(o *MaintenanceWindow) bool {
	if w == nil || o == nil {
		return w == o
	}
	if w.Start != o.Start || w.Duration != o.Duration || w.TimeZone != o.TimeZone || len(w.Days) != len(o.Days) {
		return false
	}
	for i := range w.Days {
		if w.Days[i] != o.Days[i] {
			return false
		}
	}
	return true
}

// ApprovalGate is a point of the plan where the operation stops until
// someone approves it.
// +kubebuilder:validation:Enum=BeforeNodeGroups;BeforeEachNodeGroup;BeforeDrain
type ApprovalGate string

const (
	// GateBeforeNodeGroups: once, after the control plane and the addons,
	// before the first step of the first node group. Its gate id is
	// "BeforeNodeGroups".
	GateBeforeNodeGroups ApprovalGate = "BeforeNodeGroups"
	// GateBeforeEachNodeGroup: before the first step of every node group;
	// gate id "BeforeEachNodeGroup/<nodeGroupName>".
	GateBeforeEachNodeGroup ApprovalGate = "BeforeEachNodeGroup"
	// GateBeforeDrain: before the DrainNodes step of every blue-green node
	// group (an in-place upgrade drains inside the cloud's own operation:
	// gate it with BeforeEachNodeGroup); gate id
	// "BeforeDrain/<nodeGroupName>".
	GateBeforeDrain ApprovalGate = "BeforeDrain"
)

// GateID is the id of gate for the node group (ignored by
// BeforeNodeGroups), as spec.approved and status.awaitingApproval name it.
func GateID(gate ApprovalGate, nodeGroupName string) string {
	if gate == GateBeforeNodeGroups {
		return string(gate)
	}
	return string(gate) + "/" + nodeGroupName
}

// GatesBefore returns the gate ids that must be approved before the step
// at index i of steps starts, in the order they are asked for.
func (s *ClusterUpgradeOperationSpec) GatesBefore(steps []UpgradeStep, i int) []string {
	if len(s.Approvals) == 0 || i < 0 || i >= len(steps) || steps[i].Type != StepTypeNodeGroup {
		return nil
	}
	ng := s.NodeGroupUpgradeOf(&steps[i])
	if ng == nil {
		return nil
	}
	firstOfGroup := true
	firstNodeGroupStep := true
	for j := 0; j < i; j++ {
		if steps[j].Type != StepTypeNodeGroup {
			continue
		}
		firstNodeGroupStep = false
		if o := s.NodeGroupUpgradeOf(&steps[j]); o != nil && o.NodeGroupName == ng.NodeGroupName {
			firstOfGroup = false
		}
	}
	var out []string
	for _, g := range []ApprovalGate{GateBeforeNodeGroups, GateBeforeEachNodeGroup, GateBeforeDrain} {
		if !s.HasApproval(g) {
			continue
		}
		switch {
		case g == GateBeforeNodeGroups && firstNodeGroupStep,
			g == GateBeforeEachNodeGroup && firstOfGroup,
			g == GateBeforeDrain && steps[i].Action == ActionDrainNodes:
			out = append(out, GateID(g, ng.NodeGroupName))
		}
	}
	return out
}

// HasApproval reports whether spec.approvals asks for gate.
func (s *ClusterUpgradeOperationSpec) HasApproval(gate ApprovalGate) bool {
	for _, g := range s.Approvals {
		if g == gate {
			return true
		}
	}
	return false
}

// IsApproved reports whether spec.approved holds the gate id.
func (s *ClusterUpgradeOperationSpec) IsApproved(id string) bool {
	for _, a := range s.Approved {
		if a == id {
			return true
		}
	}
	return false
}

// AwaitingApproval is the gate an operation in phase AwaitingApproval
// stops at.
type AwaitingApproval struct {
	// Gate is the gate id to approve: BeforeNodeGroups,
	// BeforeEachNodeGroup/<nodeGroupName> or BeforeDrain/<nodeGroupName>.
	// Approve it by adding it to spec.approved (PUT
	// /ops/api/v1/upgradeOperations/{id}/approve does).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Gate string `json:"gate"`

	// NextStep is the step that starts once the gate is approved.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	NextStep string `json:"nextStep"`

	// Done lists the steps finished so far (Succeeded or Skipped).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=512
	// +kubebuilder:validation:items:MaxLength=256
	Done []string `json:"done,omitempty"`

	// Since is when the operation reached the gate.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}

// EffectiveMaintenanceWindow is the window the operator applies: the
// operation's own, or the operator's default for its cluster.
type EffectiveMaintenanceWindow struct {
	MaintenanceWindow `json:",inline"`

	// Source says where the window comes from: "spec", or "default" with
	// the rule of the operator's --maintenance-windows that matched.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Source string `json:"source"`
}

// GateIDs returns every gate id the operation's approvals ask for, in
// plan order: the ids spec.approved may hold to some effect.
func (s *ClusterUpgradeOperationSpec) GateIDs() []string {
	var out []string
	if len(s.NodeGroupUpgrades) > 0 && s.HasApproval(GateBeforeNodeGroups) {
		out = append(out, GateID(GateBeforeNodeGroups, ""))
	}
	for _, ng := range s.NodeGroupUpgrades {
		if s.HasApproval(GateBeforeEachNodeGroup) {
			out = append(out, GateID(GateBeforeEachNodeGroup, ng.NodeGroupName))
		}
		if s.HasApproval(GateBeforeDrain) && ng.Strategy == StrategyBlueGreen {
			out = append(out, GateID(GateBeforeDrain, ng.NodeGroupName))
		}
	}
	return out
}
