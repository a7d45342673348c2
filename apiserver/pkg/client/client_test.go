package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/apiserver/pkg/client"
)

// fakeAPI answers GET and POST of vmclusters on 127.0.0.1 and records the
// last request's Authorization header and body.
func fakeAPI() (*httptest.Server, *string, *string) {
	var auth, body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		raw, _ := io.ReadAll(r.Body)
		body = string(raw)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/observability-ops/vmclusters":
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"id":"u1","name":"vmclusters/demo","status":"CREATING","endpoints":{},"helm_release_info":{},"values":{}}`)
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/observability-ops/vmclusters/demo":
			_, _ = io.WriteString(w, `{"id":"u1","name":"vmclusters/demo","status":"RUNNING","endpoints":{},"helm_release_info":{},"values":{}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":{"code":404,"status":"NOT_FOUND","message":"vmcluster nope not found"}}`)
		}
	}))
	return srv, &auth, &body
}

func Example() {
	srv, _, _ := fakeAPI() // ops-apiserver, e.g. http://127.0.0.1:8080
	defer srv.Close()
	ctx := context.Background()
	c, err := client.NewClientWithResponses(srv.URL, client.WithBearerToken("my-token"))
	if err != nil {
		log.Fatal(err)
	}
	created, err := c.VmclustersCreateWithResponse(ctx, client.VMClusterCreate{
		Name:   "demo",
		Values: client.Values{"vmstorage": map[string]any{"replicaCount": 1}},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.ResponseError(created.HTTPResponse, created.Body); err != nil {
		log.Fatal(err)
	}
	fmt.Println(created.JSON202.Name, created.JSON202.Status)

	got, err := c.VmclustersGetWithResponse(ctx, "demo")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.JSON200.Name, got.JSON200.Status)

	missing, err := c.VmclustersGetWithResponse(ctx, "nope")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(client.ResponseError(missing.HTTPResponse, missing.Body))
	// Output:
	// vmclusters/demo CREATING
	// vmclusters/demo RUNNING
	// NOT_FOUND (HTTP 404): vmcluster nope not found
}

func TestRequests(t *testing.T) {
	g := NewWithT(t)
	srv, auth, body := fakeAPI()
	defer srv.Close()
	g.Expect(srv.URL).To(HavePrefix("http://127.0.0.1:"))
	c, err := client.NewClientWithResponses(srv.URL, client.WithBearerToken("t1"))
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := c.VmclustersCreateWithResponse(context.Background(), client.VMClusterCreate{Name: "demo"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode()).To(Equal(http.StatusAccepted))
	g.Expect(*auth).To(Equal("Bearer t1"))
	// Absent optional fields, objects included, are left out of the body.
	g.Expect(*body).To(MatchJSON(`{"name":"demo"}`))

	c, err = client.NewClientWithResponses(srv.URL, client.WithBearerToken(""))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.VmclustersGetWithResponse(context.Background(), "demo")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*auth).To(BeEmpty(), "no token, no header")
}

func TestResponseError(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"2xx is no error", 202, `{}`, ""},
		{"AIP-193 body", 409, `{"error":{"code":409,"status":"ABORTED","message":"etag mismatch"}}`, "ABORTED (HTTP 409): etag mismatch"},
		{"a body that is not AIP-193", 502, `bad gateway`, "HTTP 502: bad gateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := client.ResponseError(&http.Response{StatusCode: tc.status}, []byte(tc.body))
			if tc.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tc.want))
			var apiErr *client.APIError
			g.Expect(err).To(BeAssignableToTypeOf(apiErr))
			b, _ := json.Marshal(err.(*client.APIError).HTTPStatus)
			g.Expect(string(b)).To(Equal(fmt.Sprint(tc.status)))
		})
	}
}
