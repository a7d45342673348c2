// Package events lists the Kubernetes Events of a set of objects: the one
// code path behind GET …/vmclusters/{id}/events and GET
// /ops/api/v1/upgradeOperations/{id}/events.
//
// Events are read live from core/v1 (which also serves the Events written
// through events.k8s.io/v1: both are views of one resource), one List per
// namespace involved, with type and reason as field selectors. An Event
// belongs to an object when their UIDs match, or, when either UID is
// unknown, their kind, namespace and name. Events of cluster-scoped
// objects (Nodes) are looked for in the namespace "default", where the
// kubelet and the node controllers record them, and in the namespaces of
// the other objects.
//
// The order is newest first (the Event's eventTime, else lastTimestamp,
// else firstTimestamp, else its creation), ties by namespace and name;
// the page token is the position of the last Event returned.
package events

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/listing"
)

// ClusterScopedNamespace is where Events of cluster-scoped objects are.
const ClusterScopedNamespace = "default"

// MaxSince bounds a since duration.
const MaxSince = 366 * 24 * time.Hour

// Ref is an object whose Events are wanted. Namespace is empty for a
// cluster-scoped object; UID may be empty when unknown.
type Ref struct {
	Kind      string
	Namespace string
	Name      string
	UID       types.UID
}

// Query is a validated events query.
type Query struct {
	// Type is Normal or Warning (empty: both).
	Type string
	// Reason is an Event reason (empty: any).
	Reason string
	// Since drops the Events older than it (zero: none).
	Since    time.Time
	PageSize int
	after    *cursor
}

type cursor struct {
	Time string `json:"t"`
	Key  string `json:"k"`
}

// Object is the object an Event is about.
type Object struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

// Event is one Kubernetes Event.
type Event struct {
	// Name is the Event's namespace/name.
	Name    string `json:"name"`
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Object  Object `json:"object"`
	// Source is the component that reported it.
	Source string `json:"source,omitempty"`
	// Count is how many times it happened (at least 1).
	Count int32 `json:"count"`
	// FirstTime and Time (the last occurrence) are RFC 3339.
	FirstTime string `json:"firstTime,omitempty"`
	Time      string `json:"time"`
}

// List is the body of an events list.
type List struct {
	Events        []Event `json:"events"`
	NextPageToken string  `json:"next_page_token,omitempty"`
}

// Parse validates type, reason, since, page_size and page_token (one
// violation per bad parameter). since is an RFC 3339 time or a Go
// duration back from now (30m, 2h; at most 366 days).
func Parse(q url.Values, now time.Time) (Query, *apierror.Error) {
	var vs []apierror.FieldViolation
	out := Query{Type: q.Get("type"), Reason: q.Get("reason")}
	if out.Type != "" && out.Type != corev1.EventTypeNormal && out.Type != corev1.EventTypeWarning {
		vs = append(vs, apierror.Violation("type", "must be Normal or Warning"))
	}
	if len(out.Reason) > 128 || strings.ContainsAny(out.Reason, ",=!") {
		vs = append(vs, apierror.Violation("reason", "must be at most 128 characters, without ',', '=' or '!'"))
	}
	if s := q.Get("since"); s != "" {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			out.Since = t
		} else if d, err := time.ParseDuration(s); err == nil && d > 0 && d <= MaxSince {
			out.Since = now.Add(-d)
		} else {
			vs = append(vs, apierror.Violation("since", "must be an RFC 3339 time or a positive duration of at most %s (e.g. 30m, 2h)", MaxSince))
		}
	}
	size, pv := listing.SnakeCase.Parse(q, func(tok string) error {
		var c cursor
		out.after = &c
		if err := listing.Decode(tok, &c); err != nil || c.Time == "" || c.Key == "" {
			return listing.ErrInvalid
		}
		return nil
	})
	out.PageSize = size
	vs = append(vs, pv...)
	if len(vs) > 0 {
		return Query{}, apierror.InvalidArgument("the events request is invalid", vs...)
	}
	return out, nil
}

// When is the time an Event is ordered by.
func When(e *corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// matches reports that e is about r.
func (r Ref) matches(e *corev1.Event) bool {
	o := e.InvolvedObject
	if r.UID != "" && o.UID != "" {
		return r.UID == o.UID
	}
	return o.Kind == r.Kind && o.Name == r.Name && o.Namespace == r.Namespace
}

type item struct {
	ev   *corev1.Event
	time string
	key  string
}

// newestFirst orders items newest first, equal times by key descending.
func newestFirst(a, b item) int {
	return cmp.Or(strings.Compare(b.time, a.time), strings.Compare(b.key, a.key))
}

// Read lists the Events of refs (all of them, unpaged, newest first).
func Read(ctx context.Context, r client.Reader, refs []Ref, q Query) ([]corev1.Event, error) {
	items, err := read(ctx, r, refs, q)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(items, newestFirst)
	out := make([]corev1.Event, 0, len(items))
	for _, it := range items {
		out = append(out, *it.ev)
	}
	return out, nil
}

func read(ctx context.Context, r client.Reader, refs []Ref, q Query) ([]item, error) {
	var namespaces []string
	for _, ref := range refs {
		ns := ref.Namespace
		if ns == "" {
			ns = ClusterScopedNamespace
		}
		if !slices.Contains(namespaces, ns) {
			namespaces = append(namespaces, ns)
		}
	}
	sel := fields.Set{}
	if q.Type != "" {
		sel["type"] = q.Type
	}
	if q.Reason != "" {
		sel["reason"] = q.Reason
	}
	var items []item
	for _, ns := range namespaces {
		var list corev1.EventList
		opts := []client.ListOption{client.InNamespace(ns)}
		if len(sel) > 0 {
			opts = append(opts, client.MatchingFieldsSelector{Selector: fields.SelectorFromSet(sel)})
		}
		if err := r.List(ctx, &list, opts...); err != nil {
			return nil, fmt.Errorf("listing Events in %s: %w", ns, err)
		}
		for i := range list.Items {
			e := &list.Items[i]
			if !slices.ContainsFunc(refs, func(r Ref) bool { return r.matches(e) }) {
				continue
			}
			w := When(e)
			if !q.Since.IsZero() && w.Before(q.Since) {
				continue
			}
			items = append(items, item{ev: e, time: w.UTC().Format(time.RFC3339Nano), key: e.Namespace + "/" + e.Name})
		}
	}
	return items, nil
}

// Page lists one page of the Events of refs.
func Page(ctx context.Context, r client.Reader, refs []Ref, q Query) (List, error) {
	items, err := read(ctx, r, refs, q)
	if err != nil {
		return List{}, err
	}
	var after func(item) bool
	if c := q.after; c != nil {
		after = func(it item) bool { return newestFirst(item{time: c.Time, key: c.Key}, it) < 0 }
	}
	page, more := listing.Page(items, newestFirst, after, q.PageSize)
	out := List{Events: make([]Event, 0, len(page))}
	for _, it := range page {
		out.Events = append(out.Events, View(it.ev))
	}
	if more {
		last := page[len(page)-1]
		out.NextPageToken = listing.Encode(cursor{Time: last.time, Key: last.key})
	}
	return out, nil
}

// View is the API's view of an Event.
func View(e *corev1.Event) Event {
	o := e.InvolvedObject
	v := Event{Name: e.Namespace + "/" + e.Name, Type: e.Type, Reason: e.Reason, Message: e.Message,
		Object: Object{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: string(o.UID)},
		Source: e.ReportingController, Count: e.Count, Time: When(e).UTC().Format(time.RFC3339)}
	if v.Source == "" {
		v.Source = e.Source.Component
	}
	if e.Series != nil && e.Series.Count > v.Count {
		v.Count = e.Series.Count
	}
	if v.Count < 1 {
		v.Count = 1
	}
	if !e.FirstTimestamp.IsZero() {
		v.FirstTime = e.FirstTimestamp.UTC().Format(time.RFC3339)
	}
	return v
}
