package cloudtest

import (
	"encoding/json"
	"net/http"
)

// MaxBody bounds the request bodies a fake reads.
const MaxBody = 1 << 20

// WriteJSON answers status with v as JSON under the cloud's own
// Content-Type.
func WriteJSON(w http.ResponseWriter, status int, contentType string, v any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// ReadJSON decodes a request body of at most MaxBody bytes into v; on
// failure it calls refuse, which answers in the cloud's error format, and
// reports false.
func ReadJSON(w http.ResponseWriter, r *http.Request, v any, refuse func(err error)) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(v); err != nil {
		refuse(err)
		return false
	}
	return true
}
