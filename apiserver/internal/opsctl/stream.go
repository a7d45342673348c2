package opsctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tidbcloud/ops-server/apiserver/pkg/client"
	"github.com/tidbcloud/ops-server/apiserver/pkg/client/watch"
)

// upgradesWatchPath is the list route whose ?watch=true stream
// NewStreamSource follows (docs/apiserver.md, "Watch streams").
const upgradesWatchPath = "/ops/api/v1/upgradeOperations?watch=true"

// NewStreamSource returns a source that follows the operation on the
// upgrade operations' watch stream: one state per change the server
// sees, resumed with Last-Event-ID after a dropped connection (so no
// phase is missed), no polling. The first state is a GET, so an unknown
// id is the API's 404. A server that does not serve the stream (an older
// ops-apiserver answers 400) is polled every interval instead.
func NewStreamSource(c *client.Client, id string, interval time.Duration) UpgradeSource {
	return &streamSource{c: c, id: id, interval: interval}
}

type streamSource struct {
	c        *client.Client
	id       string
	interval time.Duration
	states   chan streamState // nil until the first Next
	poll     UpgradeSource    // set when the server has no stream
}

type streamState struct {
	op  *client.UpgradeOperation
	err error
}

func (s *streamSource) Next(ctx context.Context) (*client.UpgradeOperation, error) {
	if s.poll != nil {
		return s.poll.Next(ctx)
	}
	if s.states == nil {
		op, err := getUpgrade(ctx, s.c, s.id)
		if err != nil {
			return nil, err
		}
		s.states = make(chan streamState)
		go s.follow(ctx)
		return op, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case st := <-s.states:
		var se *watch.StatusError
		if errors.As(st.err, &se) && !se.Retryable() {
			s.poll = &pollingSource{c: s.c, id: s.id, interval: s.interval, polled: true}
			return s.poll.Next(ctx)
		}
		return st.op, st.err
	}
}

// follow streams the operations and hands on the states of s.id until
// the stream ends (ctx done, or an error it does not retry).
func (s *streamSource) follow(ctx context.Context) {
	send := func(st streamState) error {
		select {
		case s.states <- st:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	err := watch.Stream(ctx, s.streamClient(), strings.TrimSuffix(s.c.Server, "/")+upgradesWatchPath,
		watch.Options{Header: s.header(ctx)},
		func(ev watch.Event) error {
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
			default:
				return nil
			}
			op := &client.UpgradeOperation{}
			if err := json.Unmarshal(ev.Data, op); err != nil {
				return fmt.Errorf("a watch event of upgrade operations: %w", err)
			}
			if op.Id != s.id {
				return nil
			}
			if ev.Type == watch.Deleted {
				return fmt.Errorf("upgrade operation %s was deleted", s.id)
			}
			return send(streamState{op: op})
		})
	if err == nil {
		err = fmt.Errorf("the watch stream of upgrade operations ended")
	}
	_ = send(streamState{err: err})
}

// header is what the client's request editors set (the bearer token).
func (s *streamSource) header(ctx context.Context) http.Header {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.c.Server, nil)
	if err != nil {
		return nil
	}
	for _, edit := range s.c.RequestEditors {
		if edit(ctx, req) != nil {
			return nil
		}
	}
	return req.Header
}

// streamClient is the client's HTTP client without its overall timeout:
// a stream lasts until the server ends it (then Stream reconnects), and
// Stream's idle timeout catches a dead connection.
func (s *streamSource) streamClient() *http.Client {
	hc, ok := s.c.Client.(*http.Client)
	if !ok || hc == nil {
		return &http.Client{}
	}
	cp := *hc
	cp.Timeout = 0
	return &cp
}
