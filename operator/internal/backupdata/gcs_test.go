package backupdata

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

// fakeGCS serves the two Cloud Storage JSON API calls the deleter makes,
// objects.list (pages of two) and objects.delete, on 127.0.0.1 in the
// real API's wire format.
type fakeGCS struct {
	mu      sync.Mutex
	objects map[string]bool // "bucket/name"
}

func (f *fakeGCS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/storage/v1/b/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	bucket, obj, _ := strings.Cut(rest, "/o")
	switch {
	case r.Method == http.MethodGet && obj == "":
		prefix, token := r.URL.Query().Get("prefix"), r.URL.Query().Get("pageToken")
		var names []string
		for k := range f.objects {
			if n, ok := strings.CutPrefix(k, bucket+"/"); ok && strings.HasPrefix(n, prefix) && n > token {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		type item struct {
			Name string `json:"name"`
		}
		out := struct {
			Kind          string `json:"kind"`
			Items         []item `json:"items,omitempty"`
			NextPageToken string `json:"nextPageToken,omitempty"`
		}{Kind: "storage#objects"}
		for i, n := range names {
			if i == 2 {
				out.NextPageToken = names[1]
				break
			}
			out.Items = append(out.Items, item{Name: n})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	case r.Method == http.MethodDelete && strings.HasPrefix(obj, "/"):
		name, err := url.PathUnescape(obj[1:])
		if err != nil || !f.objects[bucket+"/"+name] {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":404,"message":"No such object"}}`))
			return
		}
		delete(f.objects, bucket+"/"+name)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotImplemented)
	}
}

func TestRemoveGCS(t *testing.T) {
	g := NewWithT(t)
	f := &fakeGCS{objects: map[string]bool{
		"o11y/prod/vmc/backup-1/vmstorage-0/data/part1":              true,
		"o11y/prod/vmc/backup-1/vmstorage-0/data/part2":              true,
		"o11y/prod/vmc/backup-1/vmstorage-0/backup_complete.ignore":  true,
		"o11y/prod/vmc/backup-10/vmstorage-0/backup_complete.ignore": true,
	}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewUnstartedServer(f)
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)

	n, err := Remove(context.Background(), []string{"gs://o11y/prod/vmc/backup-1/vmstorage-0"}, Credentials{}, Options{GCSEndpoint: srv.URL})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(3))
	g.Expect(f.objects).To(Equal(map[string]bool{"o11y/prod/vmc/backup-10/vmstorage-0/backup_complete.ignore": true}))
	n, err = Remove(context.Background(), []string{"gs://o11y/prod/vmc/backup-1/vmstorage-0"}, Credentials{}, Options{GCSEndpoint: srv.URL})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeZero())
}
