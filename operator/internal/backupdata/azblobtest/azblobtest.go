// Package azblobtest is a minimal Azure Blob Storage server for tests: the
// calls package backupdata makes (List Blobs, Delete Blob), in the real
// service's wire format (path-style, as the Azurite emulator serves it:
// /<account>/<container>/<blob>), on 127.0.0.1, so the real Azure SDK code
// runs against it.
package azblobtest

import (
	"encoding/xml"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Server is a Blob service on 127.0.0.1 for one storage account, speaking
// List Blobs (restype=container&comp=list, pages of two blobs, so the
// marker is followed) and Delete Blob. It checks that requests are
// authorized: a SharedKey Authorization header for Account, or a SAS whose
// sig is SAS.
type Server struct {
	mu sync.Mutex
	// Account is the storage account name (the first path segment).
	Account string
	// SAS, when set, is the sig of the one SAS token accepted.
	SAS string
	// Blobs are the blob names of each container.
	Blobs map[string]map[string]bool
	calls []string
}

// Names returns a copy of a container's blob names.
func (f *Server) Names(containerName string) map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]bool{}
	for k := range f.Blobs[containerName] {
		out[k] = true
	}
	return out
}

// Calls are the calls served ("list", "delete"), in order.
func (f *Server) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *Server) fail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("x-ms-error-code", code)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, msg)
}

func (f *Server) authorized(r *http.Request) bool {
	if f.SAS != "" && r.URL.Query().Get("sig") == f.SAS {
		return true
	}
	a := r.Header.Get("Authorization")
	return strings.HasPrefix(a, "SharedKey "+f.Account+":") && len(a) > len("SharedKey "+f.Account+":") &&
		r.Header.Get("x-ms-date") != "" && r.Header.Get("x-ms-version") != ""
}

func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("x-ms-request-id", "00000000-0000-0000-0000-000000000000")
	w.Header().Set("x-ms-version", r.Header.Get("x-ms-version"))
	if !f.authorized(r) {
		f.fail(w, http.StatusForbidden, "AuthenticationFailed", "Server failed to authenticate the request.")
		return
	}
	account, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	containerName, blob, _ := strings.Cut(rest, "/")
	if account != f.Account {
		f.fail(w, http.StatusBadRequest, "InvalidUri", "unknown account")
		return
	}
	blobs, ok := f.Blobs[containerName]
	if !ok {
		f.fail(w, http.StatusNotFound, "ContainerNotFound", "The specified container does not exist.")
		return
	}
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && blob == "" && q.Get("restype") == "container" && q.Get("comp") == "list":
		f.calls = append(f.calls, "list")
		var all []string
		for k := range blobs {
			if strings.HasPrefix(k, q.Get("prefix")) {
				all = append(all, k)
			}
		}
		sort.Strings(all)
		// The marker is the next name to return, as the real service's
		// (opaque) marker resumes by name: deleting listed blobs between
		// pages skips nothing.
		start := 0
		if m := q.Get("marker"); m != "" {
			start = sort.SearchStrings(all, m)
		}
		end := min(start+2, len(all))
		type props struct {
			ContentLength int64  `xml:"Content-Length"`
			BlobType      string `xml:"BlobType"`
		}
		type item struct {
			Name       string
			Properties props
		}
		out := struct {
			XMLName         xml.Name `xml:"EnumerationResults"`
			ServiceEndpoint string   `xml:"ServiceEndpoint,attr"`
			ContainerName   string   `xml:"ContainerName,attr"`
			Prefix          string
			Marker          string
			MaxResults      int
			Blobs           []item `xml:"Blobs>Blob"`
			NextMarker      string
		}{ServiceEndpoint: "http://" + r.Host + "/" + account + "/", ContainerName: containerName,
			Prefix: q.Get("prefix"), Marker: q.Get("marker"), MaxResults: 2}
		if end < len(all) {
			out.NextMarker = all[end]
		}
		for _, k := range all[start:end] {
			out.Blobs = append(out.Blobs, item{Name: k, Properties: props{ContentLength: 1, BlobType: "BlockBlob"}})
		}
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write([]byte(xml.Header))
		_ = xml.NewEncoder(w).Encode(out)
	case r.Method == http.MethodDelete && blob != "":
		f.calls = append(f.calls, "delete")
		if !blobs[blob] {
			f.fail(w, http.StatusNotFound, "BlobNotFound", "The specified blob does not exist.")
			return
		}
		delete(blobs, blob)
		w.Header().Set("x-ms-delete-type-permanent", "true")
		w.WriteHeader(http.StatusAccepted)
	default:
		f.fail(w, http.StatusNotImplemented, "NotImplemented", r.Method+" "+r.URL.String())
	}
}

// Start serves f on 127.0.0.1 until the test ends and returns the Blob
// service URL of its account (http://127.0.0.1:<port>/<account>).
func Start(t testing.TB, f *Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening on 127.0.0.1: %v", err)
	}
	srv := httptest.NewUnstartedServer(f)
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL + "/" + f.Account
}
