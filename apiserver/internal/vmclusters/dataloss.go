package vmclusters

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

// The data-loss guards of PUT (docs/vmclusters.md, "Changes that lose
// data").
//
// A PUT replaces the values as a whole, so a client that forgets a key
// silently falls back to the chart's default. The guards therefore compare
// effective values: the request's values coalesced over the chart's
// defaults (as Helm does: maps merge, a null removes the default), the
// current release's against the requested one's, each with the defaults of
// its own chart version.
//
// Two kinds of change are refused:
//   - changes that delete data (vmstorage.storage.emptyDir false -> true,
//     a shorter retentionPeriod): refused unless the request sets
//     allow_data_loss: true;
//   - changes Kubernetes cannot carry out on existing volumes (a smaller
//     vmstorage.storage.size, another storageClassName while both sides
//     use PersistentVolumeClaims): refused always; allow_data_loss does not
//     make a PersistentVolumeClaim shrink. Recreate the vmcluster instead.
//
// The keys are those of the baked-in chart (vmstorage.storage: {size,
// storageClassName, emptyDir}); a chart whose defaults are unknown (one
// from an https or oci repository) is assumed to have the baked-in chart's
// defaults (FallbackDefaults).

// vmDefaultRetention is VictoriaMetrics' retentionPeriod when none is
// given: one month.
const vmDefaultRetention = "1"

// ReasonDataLoss is the reason of a PUT refused by the data-loss guards.
const ReasonDataLoss = "DATA_LOSS_NOT_ALLOWED"

// FallbackDefaults are the chart defaults the guards assume when the
// chart's own are not known: those of the baked-in chart.
func FallbackDefaults() map[string]any {
	return map[string]any{
		"retentionPeriod": "1",
		"vmstorage": map[string]any{
			"storage": map[string]any{"size": "10Gi", "storageClassName": "", "emptyDir": false},
		},
	}
}

// Paths of the guarded values.
var (
	pathRetention    = []string{"retentionPeriod"}
	pathEmptyDir     = []string{"vmstorage", "storage", "emptyDir"}
	pathSize         = []string{"vmstorage", "storage", "size"}
	pathStorageClass = []string{"vmstorage", "storage", "storageClassName"}
)

// Effective is a set of request values over the defaults of their chart
// version.
type Effective struct {
	Values   map[string]any
	Defaults map[string]any
}

// lookup returns the effective value at path: the request's when it sets
// one, else the default's; found is false when neither has one or when the
// request set a map on the way to null (Helm deletes the default then).
func (e Effective) lookup(path []string) (any, bool) {
	var cur any = e.Values
	for i, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			// A scalar where the chart has a map: Helm keeps the
			// request's value, so the map's keys are gone.
			return nil, false
		}
		v, present := m[k]
		if !present {
			break
		}
		if v == nil {
			return nil, false
		}
		if i == len(path)-1 {
			return v, true
		}
		cur = v
	}
	var d any = e.Defaults
	for _, k := range path {
		m, ok := d.(map[string]any)
		if !ok {
			return nil, false
		}
		if d, ok = m[k]; !ok || d == nil {
			return nil, false
		}
	}
	return d, true
}

// DecodeValues decodes a values object (numbers kept as written); absent
// or null is an empty map.
func DecodeValues(raw []byte) (map[string]any, error) {
	m := map[string]any{}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return m, nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// truthy is Go template truth, which the chart's `if` applies: the string
// "false" is true.
func truthy(v any) bool {
	if v == nil {
		return false
	}
	switch t := v.(type) {
	case bool:
		return t
	case json.Number:
		f, err := t.Float64()
		return err != nil || f != 0
	case float64:
		return t != 0
	case int:
		return t != 0
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String, reflect.Map, reflect.Slice, reflect.Array:
		return rv.Len() > 0
	}
	return true
}

func scalarString(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case json.Number:
		return string(t), true
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), true
	case int:
		return strconv.Itoa(t), true
	}
	return "", false
}

var (
	retentionMonthsRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	retentionUnitRE   = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?)([hdwy])$`)
)

// hoursPer are the hours of a retentionPeriod unit; a month is 31 days, as
// VictoriaMetrics counts it.
var hoursPer = map[string]float64{"h": 1, "d": 24, "w": 7 * 24, "y": 365 * 24, "": 31 * 24}

// RetentionHours parses a VictoriaMetrics retentionPeriod: a number of
// months, or a number with the suffix h, d, w or y.
func RetentionHours(v any) (float64, error) {
	s, ok := scalarString(v)
	if !ok {
		return 0, fmt.Errorf("must be a number of months or a number with the suffix h, d, w or y")
	}
	s = strings.TrimSpace(s)
	unit := ""
	num := s
	if !retentionMonthsRE.MatchString(s) {
		m := retentionUnitRE.FindStringSubmatch(s)
		if m == nil {
			return 0, fmt.Errorf("must be a number of months or a number with the suffix h, d, w or y (got %.32q)", s)
		}
		num, unit = m[1], m[3]
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("must be a number of months or a number with the suffix h, d, w or y (got %.32q)", s)
	}
	return f * hoursPer[unit], nil
}

func describe(v any, found bool) string {
	if !found {
		return "unset"
	}
	if s, ok := scalarString(v); ok {
		return strconv.Quote(truncate(s, 32))
	}
	b, _ := json.Marshal(v)
	return truncate(string(b), 32)
}

// CheckDataLoss returns one violation per guarded value the change from
// old to new would lose data with or could not carry out (see the top of
// this file); allow is the request's allow_data_loss.
func CheckDataLoss(old, new Effective, allow bool) []apierror.FieldViolation {
	var out []apierror.FieldViolation
	oldEmpty, _ := old.lookup(pathEmptyDir)
	newEmpty, _ := new.lookup(pathEmptyDir)
	oldPVC, newPVC := !truthy(oldEmpty), !truthy(newEmpty)
	if oldPVC && !newPVC && !allow {
		out = append(out, apierror.Violation("values.vmstorage.storage.emptyDir",
			"switching vmstorage from PersistentVolumeClaims to an emptyDir deletes its data; set allow_data_loss: true to do it anyway"))
	}
	if oldPVC && newPVC {
		oldSize, oldFound := old.lookup(pathSize)
		newSize, newFound := new.lookup(pathSize)
		if oq, ok := quantity(oldSize, oldFound); ok && newFound {
			nq, ok := quantity(newSize, newFound)
			switch {
			case !ok:
				out = append(out, apierror.Violation("values.vmstorage.storage.size", "must be a quantity such as 10Gi"))
			case nq.Cmp(oq) < 0:
				out = append(out, apierror.Violation("values.vmstorage.storage.size",
					"cannot shrink from %s to %s: a PersistentVolumeClaim cannot shrink (allow_data_loss does not change that); keep %s or recreate the vmcluster",
					describe(oldSize, true), describe(newSize, true), describe(oldSize, true)))
			}
		}
		// Unset and "" both mean the cluster's default class.
		oldClass, oldFound := old.lookup(pathStorageClass)
		newClass, newFound := new.lookup(pathStorageClass)
		oc, _ := scalarString(oldClass)
		nc, _ := scalarString(newClass)
		if oc != nc {
			out = append(out, apierror.Violation("values.vmstorage.storage.storageClassName",
				"cannot change from %s to %s: the existing PersistentVolumeClaims keep their storage class (allow_data_loss does not change that); keep it or recreate the vmcluster",
				describe(oldClass, oldFound), describe(newClass, newFound)))
		}
	}
	// Unset (a null in the request): VictoriaMetrics' own default.
	oldRet, oldFound := old.lookup(pathRetention)
	if !oldFound {
		oldRet = vmDefaultRetention
	}
	newRet, newFound := new.lookup(pathRetention)
	if !newFound {
		newRet = vmDefaultRetention
	}
	{
		oh, oerr := RetentionHours(oldRet)
		nh, nerr := RetentionHours(newRet)
		switch {
		case nerr != nil:
			out = append(out, apierror.Violation("values.retentionPeriod", "%s", nerr.Error()))
		case oerr == nil && nh < oh && !allow:
			out = append(out, apierror.Violation("values.retentionPeriod",
				"shortening the retention from %s to %s deletes the data older than the new period; set allow_data_loss: true to do it anyway",
				describe(oldRet, true), describe(newRet, true)))
		}
	}
	return out
}

// quantity parses a storage size; ok is false when absent or not a
// quantity.
func quantity(v any, found bool) (resource.Quantity, bool) {
	if !found {
		return resource.Quantity{}, false
	}
	s, ok := scalarString(v)
	if !ok {
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		return resource.Quantity{}, false
	}
	return q, true
}
