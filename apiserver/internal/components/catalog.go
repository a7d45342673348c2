package components

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/vmclusters"
)

// Entry is one chart of the catalog.
type Entry struct {
	// Source is where the chart comes from, its versions, defaults and
	// values validators (the same type vmclusters use).
	Source vmclusters.ChartSource
	// Namespaces are the target namespaces allowed besides the ops-server
	// namespace.
	Namespaces []string
}

// Catalog is the set of charts components may install, by chart name.
type Catalog struct {
	Entries map[string]Entry
	// VMClusterChart is the vmclusters' chart, refused here with a
	// pointer to /vmclusters.
	VMClusterChart string
}

// Names lists the catalog's chart names, sorted.
func (c Catalog) Names() []string {
	out := make([]string, 0, len(c.Entries))
	for n := range c.Entries {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the entry of chart, or the violation of field "chart".
func (c Catalog) Lookup(chart string) (Entry, *apierror.FieldViolation) {
	if e, ok := c.Entries[chart]; ok {
		return e, nil
	}
	var v apierror.FieldViolation
	switch {
	case chart != "" && chart == c.VMClusterChart:
		v = apierror.Violation("chart", "%q is the vmcluster chart: create vmclusters with %s", chart, vmclusters.BasePath)
	case len(c.Entries) == 0:
		v = apierror.Violation("chart", "%q is not in the catalog: the catalog is empty (ops-apiserver configuration catalog.charts)", truncate(chart, 80))
	default:
		v = apierror.Violation("chart", "%q is not in the catalog (available: %s)", truncate(chart, 80), strings.Join(c.Names(), ", "))
	}
	return Entry{}, &v
}

// NamespaceProblem returns what is wrong with target namespace ns for
// this entry (empty if allowed); home is the ops-server namespace.
func (e Entry) NamespaceProblem(ns, home string) string {
	if ns == home || slices.Contains(e.Namespaces, ns) {
		return ""
	}
	allowed := append([]string{home}, e.Namespaces...)
	return fmt.Sprintf("chart %s may be installed into %s only", e.Source.Name, strings.Join(allowed, ", "))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
