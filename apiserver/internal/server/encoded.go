package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"
)

// Encoded is an API view with its JSON encoding, made once with the view.
// Views are kept per object version (package objindex), so a read writes
// the bytes kept instead of encoding the view again: encoding was most of
// a read's cost once the views themselves were kept. An Encoded is shared
// by the readers: it must not be modified.
type Encoded[V any] struct {
	View V
	// JSON is View as json.Marshal encodes it (what c.JSON writes, less
	// its newline); nil when View cannot be encoded.
	JSON []byte
}

// Encode encodes v once.
func Encode[V any](v V) *Encoded[V] {
	b, err := json.Marshal(v)
	if err != nil {
		b = nil // answered through c.JSON, which reports the error as before
	}
	return &Encoded[V]{View: v, JSON: b}
}

// WriteEncoded answers with e, byte for byte what c.JSON(code, e.View)
// writes.
func WriteEncoded[V any](c echo.Context, code int, e *Encoded[V]) error {
	if e.JSON == nil || !plainJSON(c) {
		return c.JSON(code, e.View)
	}
	buf := getBuffer(len(e.JSON) + 1)
	defer putBuffer(buf)
	buf.Write(e.JSON)
	buf.WriteByte('\n')
	return writeBlob(c, code, buf.Bytes())
}

// Page is a list's answer: its items under Field, then the token of the
// next page under TokenField, omitted when empty. Value makes the same
// answer as a struct (what c.JSON would encode), for when the items'
// bytes cannot be used.
type Page[V any] struct {
	Field, TokenField string
	Items             []*Encoded[V]
	Token             string
	Value             func() any
}

// WritePage answers a list 200 with p, byte for byte what c.JSON writes of
// p.Value(), by joining the items' encodings.
func WritePage[V any](c echo.Context, p Page[V]) error {
	if !plainJSON(c) {
		return c.JSON(http.StatusOK, p.Value())
	}
	size := len(p.Field) + len(p.TokenField) + len(p.Token) + 32
	for _, it := range p.Items {
		if it.JSON == nil {
			return c.JSON(http.StatusOK, p.Value())
		}
		size += len(it.JSON) + 1
	}
	buf := getBuffer(size)
	defer putBuffer(buf)
	buf.WriteByte('{')
	writeString(buf, p.Field)
	buf.WriteString(":[")
	for i, it := range p.Items {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(it.JSON)
	}
	buf.WriteByte(']')
	if p.Token != "" {
		buf.WriteByte(',')
		writeString(buf, p.TokenField)
		buf.WriteByte(':')
		writeString(buf, p.Token)
	}
	buf.WriteString("}\n")
	return writeBlob(c, http.StatusOK, buf.Bytes())
}

// writeBlob writes b as c.JSON would (its content type), with its length:
// one write, not chunks.
func writeBlob(c echo.Context, code int, b []byte) error {
	c.Response().Header().Set(echo.HeaderContentLength, strconv.Itoa(len(b)))
	return c.JSONBlob(code, b)
}

// writeString writes s as a JSON string, escaped as encoding/json does.
func writeString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // a string always encodes
	buf.Write(b)
}

// plainJSON reports whether c.JSON would write compact JSON with the
// default encoder: not pretty-printed (echo indents in debug mode or on
// ?pretty) and not through another serializer.
func plainJSON(c echo.Context) bool {
	e := c.Echo()
	if _, ok := e.JSONSerializer.(*echo.DefaultJSONSerializer); !ok || e.Debug {
		return false
	}
	_, pretty := c.QueryParams()["pretty"]
	return !pretty
}

// buffers are the answers' buffers, reused: a page of 50 vmclusters is
// tens of KiB, allocated per request otherwise.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer bounds what the pool keeps: a rare huge answer's buffer
// is left to the garbage collector.
const maxPooledBuffer = 1 << 20

func getBuffer(size int) *bytes.Buffer {
	buf := buffers.Get().(*bytes.Buffer)
	buf.Reset()
	buf.Grow(size)
	return buf
}

func putBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledBuffer {
		buffers.Put(buf)
	}
}
