// Package s3test is a minimal S3 server for tests: the calls package
// backupdata makes (ListObjectsV2, DeleteObjects), in the real service's
// wire format, on 127.0.0.1, so the real AWS SDK code runs against it.
package s3test

import (
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Server is an S3 server on 127.0.0.1 speaking the two calls the deleter
// makes, in the wire format of the real service (path-style): ListObjectsV2
// (pages of two keys, so pagination runs) and DeleteObjects. It checks that
// requests are signed with the expected access key.
type Server struct {
	mu sync.Mutex
	// Objects are the keys of each bucket.
	Objects map[string]map[string]bool
	// KeyID is the access key id requests must be signed with.
	KeyID string
	calls []string
}

// Keys returns a copy of a bucket's keys.
func (f *Server) Keys(bucket string) map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]bool{}
	for k := range f.Objects[bucket] {
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

func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !strings.Contains(r.Header.Get("Authorization"), "Credential="+f.KeyID+"/") {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidAccessKeyId</Code><Message>bad key</Message></Error>`)
		return
	}
	bucket := strings.Trim(r.URL.Path, "/")
	keys := f.Objects[bucket]
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && q.Get("list-type") == "2":
		f.calls = append(f.calls, "list")
		var all []string
		for k := range keys {
			if strings.HasPrefix(k, q.Get("prefix")) {
				all = append(all, k)
			}
		}
		sort.Strings(all)
		// The token is the last key returned, as real S3's is opaque but
		// key-based: deleting listed objects between pages skips nothing.
		start := 0
		if tok := q.Get("continuation-token"); tok != "" {
			start = sort.SearchStrings(all, tok)
			if start < len(all) && all[start] == tok {
				start++
			}
		}
		end := min(start+2, len(all))
		type content struct{ Key string }
		out := struct {
			XMLName               xml.Name `xml:"ListBucketResult"`
			Name                  string
			Prefix                string
			KeyCount              int
			IsTruncated           bool
			NextContinuationToken string    `xml:",omitempty"`
			Contents              []content `xml:"Contents"`
		}{Name: bucket, Prefix: q.Get("prefix"), KeyCount: end - start, IsTruncated: end < len(all)}
		if out.IsTruncated {
			out.NextContinuationToken = all[end-1]
		}
		for _, k := range all[start:end] {
			out.Contents = append(out.Contents, content{Key: k})
		}
		w.Header().Set("Content-Type", "application/xml")
		_ = xml.NewEncoder(w).Encode(out)
	case r.Method == http.MethodPost && q.Has("delete"):
		f.calls = append(f.calls, "delete")
		body, _ := io.ReadAll(r.Body)
		var in struct {
			Objects []struct{ Key string } `xml:"Object"`
		}
		if err := xml.Unmarshal(body, &in); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		for _, o := range in.Objects {
			delete(keys, o.Key)
		}
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><DeleteResult></DeleteResult>`)
	default:
		w.WriteHeader(http.StatusNotImplemented)
	}
}

// Start serves f on 127.0.0.1 until the test ends and returns its URL
// (the S3 endpoint, path-style).
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
	return srv.URL
}
