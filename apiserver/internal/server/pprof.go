package server

import (
	"net/http"
	"net/http/pprof"
	"time"
)

// NewPprofServer serves Go's profiling endpoints under /debug/pprof/ (the
// handlers of net/http/pprof, on their own mux: nothing registers on
// http.DefaultServeMux). It has no write timeout, since a CPU profile
// answers after its ?seconds=; it is meant for a loopback address only
// (config.Validate refuses any other).
func NewPprofServer() *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
}
