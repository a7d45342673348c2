package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	"github.com/tidbcloud/ops-server/apiserver/internal/server"
)

// createAPI creates a thing: the body is its name ("bad" is refused), and
// the key "again" replays an earlier attempt.
type createAPI struct{ keys *[]string }

func (a createAPI) Routes() []server.Route {
	return []server.Route{{Method: http.MethodPost, Path: "/things", Name: "things.create", Public: true, Handler: func(c echo.Context) error {
		name, key, err := server.DecodeCreate(c, func(body []byte) (string, *apierror.Error) {
			if string(body) == "bad" {
				return "", apierror.InvalidArgument("the request is invalid", apierror.Violation("name", "is bad"))
			}
			return string(body), nil
		})
		if err != nil {
			return err
		}
		*a.keys = append(*a.keys, key)
		return server.Created(c, http.StatusAccepted, map[string]string{"name": name}, key != "again")
	}}}
}

func TestDecodeCreateAndCreated(t *testing.T) {
	var keys []string
	h, err := server.New(server.Options{Registry: prometheus.NewRegistry(), MaxBodyBytes: 16, Ready: func(context.Context) error { return nil }}, createAPI{&keys})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("k", 256)
	tests := []struct {
		name, body, key string
		code            int
		field           string // of the 400's violation
	}{
		{name: "created", body: "a", key: "k1", code: http.StatusAccepted},
		{name: "created without a key", body: "a", code: http.StatusAccepted},
		{name: "a replay", body: "a", key: "again", code: http.StatusOK},
		{name: "a key of 255 characters", body: "a", key: long[:255], code: http.StatusAccepted},
		{name: "a key too long", body: "a", key: long, code: http.StatusBadRequest, field: "Idempotency-Key"},
		{name: "the key before the body", body: "bad", key: long, code: http.StatusBadRequest, field: "Idempotency-Key"},
		{name: "a bad body", body: "bad", key: "k1", code: http.StatusBadRequest, field: "name"},
		{name: "the body's size first", body: strings.Repeat("x", 17), key: long, code: http.StatusBadRequest, field: "body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			keys = nil
			rec := get(h, http.MethodPost, "/things", tt.body, "Idempotency-Key", tt.key)
			g.Expect(rec.Code).To(Equal(tt.code), rec.Body.String())
			if tt.field == "" {
				g.Expect(rec.Body.String()).To(MatchJSON(`{"name":"` + tt.body + `"}`))
				g.Expect(keys).To(Equal([]string{tt.key}))
				return
			}
			g.Expect(keys).To(BeEmpty(), "nothing is created")
			b := body(t, rec)
			var fields []apierror.FieldViolation
			for _, d := range b.Error.Details {
				fields = append(fields, d.FieldViolations...)
			}
			g.Expect(fields).To(HaveLen(1))
			g.Expect(fields[0].Field).To(Equal(tt.field))
			if tt.field == "Idempotency-Key" {
				g.Expect(b.Error.Message).To(Equal("invalid Idempotency-Key"))
				g.Expect(fields[0].Description).To(Equal("must be at most 255 characters"))
			}
		})
	}
}
