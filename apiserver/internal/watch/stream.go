package watch

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/go-logr/logr"
	"github.com/labstack/echo/v4"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
)

// HeaderLastEventID is the header an SSE client resumes with.
const HeaderLastEventID = "Last-Event-ID"

// ParamWatch is the query parameter that turns a list into a watch.
const ParamWatch = "watch"

// Stream is one watch request of a list route.
type Stream struct {
	// Match selects the objects the list's filters select.
	Match func(client.Object) bool
	// View is the JSON view of an object, the one the list returns.
	View func(client.Object) any
	// Since is the resume point when Resumed (ParseResume).
	Since   uint64
	Resumed bool
}

// SyncedData is the data of the SYNCED event.
type SyncedData struct {
	// ResourceVersion is the point the initial state is complete at
	// (also the event's id).
	ResourceVersion string `json:"resourceVersion"`
	// Complete is false on a resumed stream when deletions after the
	// resume point may be missing (the server has not seen them, or
	// forgot them): a client that needs them lists again or watches
	// without Last-Event-ID.
	Complete bool `json:"complete"`
}

// ParseWatch reads the watch query parameter: "true" or "1" watch,
// "false", "0" or absent list.
func ParseWatch(q url.Values) (bool, *apierror.FieldViolation) {
	switch q.Get(ParamWatch) {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	}
	v := apierror.Violation(ParamWatch, "must be true or false")
	return false, &v
}

// ParseResume reads the resume point of a watch: the Last-Event-ID
// header (what an EventSource sends when it reconnects), else the query
// parameter param. The value is an event id (a resourceVersion).
func ParseResume(r *http.Request, param string) (since uint64, resumed bool, v *apierror.FieldViolation) {
	field, raw := HeaderLastEventID, r.Header.Get(HeaderLastEventID)
	if raw == "" {
		field, raw = param, r.URL.Query().Get(param)
	}
	if raw == "" {
		return 0, false, nil
	}
	n, ok := ParseID(raw)
	if !ok {
		fv := apierror.Violation(field, "must be an event id or resourceVersion returned by this API (a decimal number)")
		return 0, false, &fv
	}
	return n, true, nil
}

// Serve streams s from the hub as server-sent events until the client
// goes, the stream reaches the broker's maximum duration, the client
// falls too far behind, or the server shuts down. Errors before the
// stream starts (the caps, a cache not synced) are returned for the
// central error handler; after that the stream just ends.
func (h *Hub) Serve(c echo.Context, s Stream) error {
	if h == nil || h.broker == nil {
		return apierror.Unavailable("watch streams are not available on this server")
	}
	if !h.Synced() {
		return apierror.Unavailable("the informer cache has not synced yet")
	}
	b := h.broker
	ctx := c.Request().Context()
	caller := ""
	if b.opts.Caller != nil {
		caller = b.opts.Caller(ctx)
	}
	release, err := b.acquire(caller)
	if err != nil {
		return err
	}
	defer release()
	sub, snap := h.subscribe(b.opts.Buffer, s.Since, s.Resumed)
	defer h.unsubscribe(sub)
	b.metrics.active.WithLabelValues(h.Kind).Inc()
	defer b.metrics.active.WithLabelValues(h.Kind).Dec()

	w := c.Response()
	rc := http.NewResponseController(w)
	start := time.Now()
	end := start.Add(b.opts.MaxDuration)
	// The server's read and write timeouts would cut the stream; the read
	// deadline now bounds the whole stream, each write its own.
	_ = rc.SetReadDeadline(end.Add(b.opts.WriteTimeout))
	hdr := w.Header()
	hdr.Set(echo.HeaderContentType, ContentType)
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	st := &stream{s: s, rc: rc, w: w, timeout: b.opts.WriteTimeout, visible: map[types.UID]bool{}}
	log := logr.FromContextOrDiscard(ctx).WithValues("kind", h.Kind, "resumed", s.Resumed, "since", s.Since)
	if err := st.initial(snap); err != nil {
		log.V(1).Info("Watch stream ended while sending the initial state", "error", err.Error())
		return nil
	}

	heartbeat := time.NewTicker(b.opts.Heartbeat)
	defer heartbeat.Stop()
	limit := time.NewTimer(time.Until(end))
	defer limit.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-b.done:
			_ = st.comment("the server is shutting down; reconnect with Last-Event-ID")
			return nil
		case <-limit.C:
			_ = st.comment(fmt.Sprintf("the stream reached its maximum duration of %s; reconnect with Last-Event-ID", b.opts.MaxDuration))
			return nil
		case <-sub.dropped:
			log.Info("Watch stream dropped: the client did not keep up")
			_ = st.comment("the client fell behind; reconnect with Last-Event-ID")
			return nil
		case <-heartbeat.C:
			if err := st.comment("heartbeat"); err != nil {
				return nil
			}
		case ch := <-sub.ch:
			if err := st.live(ch); err != nil {
				log.V(1).Info("Watch stream ended", "error", err.Error())
				return nil
			}
		}
	}
}

// stream is the state of one stream: which objects the client holds.
type stream struct {
	s       Stream
	rc      *http.ResponseController
	w       http.ResponseWriter
	timeout time.Duration
	// visible are the objects the client holds (matching the filters):
	// a change that makes one stop matching is its DELETED.
	visible map[types.UID]bool
}

func (st *stream) initial(snap snapshot) error {
	var out []change
	for _, o := range snap.objects {
		if !st.s.Match(o.obj) {
			continue
		}
		st.visible[o.obj.GetUID()] = true
		// A resumed client holds every state up to Since.
		if !st.s.Resumed || o.id > st.s.Since {
			out = append(out, o)
		}
	}
	for _, d := range snap.deleted {
		if st.s.Match(d.obj) {
			out = append(out, d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].id < out[j].id })
	for _, c := range out {
		if err := st.send(c.typ, c.id, st.s.View(c.obj)); err != nil {
			return err
		}
	}
	at := snap.last
	if st.s.Resumed {
		at = max(at, st.s.Since)
	}
	return st.send(Synced, at, SyncedData{ResourceVersion: FormatID(at), Complete: snap.complete})
}

func (st *stream) live(c change) error {
	// A resumed client already has what another server sent up to Since
	// (this one's informer may be behind it).
	if st.s.Resumed && c.id <= st.s.Since {
		return nil
	}
	uid := c.obj.GetUID()
	typ := c.typ
	switch {
	case typ == Deleted:
		if !st.visible[uid] {
			return nil
		}
		delete(st.visible, uid)
	case st.s.Match(c.obj):
		typ = Modified
		if !st.visible[uid] {
			typ = Added
		}
		st.visible[uid] = true
	case st.visible[uid]:
		// No longer selected by the filters: gone from the list.
		typ = Deleted
		delete(st.visible, uid)
	default:
		return nil
	}
	return st.send(typ, c.id, st.s.View(c.obj))
}

func (st *stream) send(typ EventType, id uint64, view any) error {
	data, err := json.Marshal(view)
	if err != nil {
		return fmt.Errorf("encoding a %s event: %w", typ, err)
	}
	_ = st.rc.SetWriteDeadline(time.Now().Add(st.timeout))
	if err := encodeEvent(st.w, FormatID(id), string(typ), data); err != nil {
		return err
	}
	return st.rc.Flush()
}

func (st *stream) comment(text string) error {
	_ = st.rc.SetWriteDeadline(time.Now().Add(st.timeout))
	if err := encodeComment(st.w, text); err != nil {
		return err
	}
	return st.rc.Flush()
}
