package vmsnapshot

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

const key = "s3cr3t&key"

// fakeVMStorage mimics vmstorage v1.100.0-cluster's snapshot handlers.
type fakeVMStorage struct {
	mu        sync.Mutex
	authKey   string
	snapshots []string
	n         int
	// seen records each request's path and raw query, to check the key
	// never travels in a URL.
	seen []string
}

func (f *fakeVMStorage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, r.URL.RequestURI())
	if f.authKey != "" && r.FormValue("authKey") != f.authKey {
		http.Error(w, "The provided authKey doesn't match -snapshotAuthKey", http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/snapshot/create":
		f.n++
		name := fmt.Sprintf("20261201041006-%016X", f.n)
		f.snapshots = append(f.snapshots, name)
		fmt.Fprintf(w, `{"status":"ok","snapshot":%q}`, name)
	case "/snapshot/list":
		fmt.Fprint(w, `{"status":"ok","snapshots":[`)
		for i, s := range f.snapshots {
			if i > 0 {
				fmt.Fprint(w, ",")
			}
			fmt.Fprintf(w, "\n%q", s)
		}
		fmt.Fprint(w, "]}")
	case "/snapshot/delete":
		name := r.FormValue("snapshot")
		for i, s := range f.snapshots {
			if s == name {
				f.snapshots = append(f.snapshots[:i], f.snapshots[i+1:]...)
				fmt.Fprint(w, `{"status":"ok"}`)
				return
			}
		}
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, `{"status":"error","msg":%q}`, fmt.Sprintf("cannot find snapshot %q", name))
	default:
		http.NotFound(w, r)
	}
}

func TestClientRoundTrip(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	fake := &fakeVMStorage{authKey: key}
	srv := httptest.NewServer(fake)
	defer srv.Close()

	c, err := New(srv.URL, key, srv.Client())
	g.Expect(err).NotTo(HaveOccurred())
	name, err := c.Create(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ValidName(name)).To(BeTrue())
	ts, err := NameTime(name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ts).To(Equal(time.Date(2026, 12, 1, 4, 10, 6, 0, time.UTC)))

	list, err := c.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list).To(Equal([]string{name}))

	g.Expect(c.Delete(ctx, name)).To(Succeed())
	err = c.Delete(ctx, name)
	g.Expect(errors.Is(err, ErrNotFound)).To(BeTrue(), "%v", err)
	g.Expect(IsTemporary(err)).To(BeFalse())

	list, err = c.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list).To(BeEmpty())
	for _, uri := range fake.seen {
		g.Expect(uri).NotTo(ContainSubstring("authKey"), "the key travels in the body, never in the URL")
		g.Expect(uri).NotTo(ContainSubstring("?"))
	}
}

func TestClientErrors(t *testing.T) {
	// A closed port: connection refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	refused := "http://" + l.Addr().String()
	_ = l.Close()

	cases := []struct {
		name      string
		handler   http.HandlerFunc
		base      string
		authKey   string
		call      func(*Client) error
		temporary bool
		want      []string
	}{
		{
			name:    "wrong auth key is permanent and never echoed",
			handler: (&fakeVMStorage{authKey: "other"}).ServeHTTP,
			authKey: key,
			call:    func(c *Client) error { _, err := c.Create(context.Background()); return err },
			want:    []string{"create snapshot on http://127.0.0.1:", "401 Unauthorized", "authKey doesn't match"},
		},
		{
			name: "vmstorage error message is kept",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprint(w, `{"status":"error","msg":"cannot create snapshot: no space left on device"}`)
			},
			call: func(c *Client) error { _, err := c.Create(context.Background()); return err },
			want: []string{"500 Internal Server Error: cannot create snapshot: no space left on device"},
		},
		{
			name: "an answer echoing the key is scrubbed",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, "bad authKey %s", r.FormValue("authKey"))
			},
			authKey: key,
			call:    func(c *Client) error { _, err := c.List(context.Background()); return err },
			want:    []string{"bad authKey <redacted>"},
		},
		{
			name: "503 is temporary",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "overloaded", http.StatusServiceUnavailable)
			},
			call:      func(c *Client) error { _, err := c.List(context.Background()); return err },
			temporary: true,
			want:      []string{"503 Service Unavailable: overloaded"},
		},
		{
			name: "a huge answer is refused",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(`{"status":"ok","snapshots":["` + strings.Repeat("x", maxBody) + `"]}`))
			},
			call: func(c *Client) error { _, err := c.List(context.Background()); return err },
			want: []string{"answer larger than"},
		},
		{
			name:    "ok without a valid name",
			handler: func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"status":"ok","snapshot":"../../etc"}`) },
			call:    func(c *Client) error { _, err := c.Create(context.Background()); return err },
			want:    []string{"unexpected snapshot name"},
		},
		{
			name:      "unreachable is temporary and names the endpoint only",
			base:      refused,
			authKey:   key,
			call:      func(c *Client) error { _, err := c.Create(context.Background()); return err },
			temporary: true,
			want:      []string{"create snapshot on " + refused + ": ", "connection refused"},
		},
		{
			name: "delete refuses a non-snapshot name",
			call: func(c *Client) error { return c.Delete(context.Background(), "../x") },
			want: []string{"not a snapshot name"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			base := tc.base
			if base == "" {
				h := tc.handler
				if h == nil {
					h = (&fakeVMStorage{}).ServeHTTP
				}
				srv := httptest.NewServer(h)
				defer srv.Close()
				base = srv.URL
			}
			c, err := New(base, tc.authKey, nil)
			g.Expect(err).NotTo(HaveOccurred())
			err = tc.call(c)
			g.Expect(err).To(HaveOccurred())
			var e *Error
			g.Expect(errors.As(err, &e)).To(BeTrue())
			g.Expect(IsTemporary(err)).To(Equal(tc.temporary))
			for _, w := range tc.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
			g.Expect(err.Error()).NotTo(ContainSubstring(key))
			g.Expect(err.Error()).NotTo(ContainSubstring("s3cr3t"))
		})
	}
}

func TestNewValidatesEndpoint(t *testing.T) {
	cases := []struct {
		name, url string
		ok        bool
	}{
		{"pod IP", "http://10.0.0.12:8482", true},
		{"https with prefix", "https://vmstorage.example:8482/prefix", true},
		{"no scheme", "10.0.0.12:8482", false},
		{"ftp", "ftp://host", false},
		{"credentials", "http://user:pw@host:8482", false},
		{"query", "http://host:8482/?authKey=x", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := New(tc.url, "", nil)
			if tc.ok {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).NotTo(ContainSubstring("pw"))
			g.Expect(err.Error()).NotTo(ContainSubstring("authKey=x"))
		})
	}
}

func TestRedact(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Redact("http://u:p@h:1/x?authKey=k#f")).To(Equal("http://h:1/x"))
	g.Expect(Redact("s3://bucket/path")).To(Equal("s3://bucket/path"))
}

// TestClientFollowsNoRedirect: a vmstorage endpoint answering with a
// redirect gets an error, and the server the redirect points at is never
// called (it would receive the auth key), whatever http.Client is passed.
func TestClientFollowsNoRedirect(t *testing.T) {
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		for _, hc := range []*http.Client{nil, {}, {CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}} {
			t.Run(fmt.Sprintf("%d/client %v", code, hc != nil), func(t *testing.T) {
				g := NewWithT(t)
				var mu sync.Mutex
				hits := 0
				second := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					hits++
					mu.Unlock()
					fmt.Fprint(w, `{"status":"ok","snapshot":"20261201041006-0000000000000001","snapshots":[]}`)
				}))
				defer second.Close()
				first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, second.URL+r.URL.Path, code)
				}))
				defer first.Close()

				c, err := New(first.URL, key, hc)
				g.Expect(err).NotTo(HaveOccurred())
				_, err = c.Create(context.Background())
				g.Expect(err).To(HaveOccurred())
				g.Expect(err.Error()).To(ContainSubstring(strconv.Itoa(code)))
				g.Expect(err.Error()).NotTo(ContainSubstring("s3cr3t"))
				_, err = c.List(context.Background())
				g.Expect(err).To(HaveOccurred())
				g.Expect(c.Delete(context.Background(), "20261201041006-0000000000000001")).To(HaveOccurred())
				mu.Lock()
				defer mu.Unlock()
				g.Expect(hits).To(BeZero(), "the redirect target was called")
			})
		}
	}
}
