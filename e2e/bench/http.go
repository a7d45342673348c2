package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
)

// target is one HTTP server the benchmark talks to: ops-apiserver or
// kube-apiserver.
type target struct {
	client *http.Client
	base   string
	header http.Header
}

// maxBody bounds what is read of one response.
const maxBody = 64 << 20

// do sends one request and returns the status and body.
func (t target) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range t.header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return resp.StatusCode, b, err
}

// read reads the response of a generated client's call: its status and
// body.
func read(resp *http.Response, err error) (int, []byte, error) {
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return resp.StatusCode, b, err
}

// get sends a GET, reads the whole body and returns its size; any status
// but 200 is an error.
func (t target) get(ctx context.Context, path string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.base+path, nil)
	if err != nil {
		return 0, err
	}
	for k, v := range t.header {
		req.Header[k] = v
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("GET %s: %s: %s", path, resp.Status, bytes.TrimSpace(b))
	}
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	return int(n), err
}

// expect checks a status and returns an error naming the request.
func expect(method, path string, status int, body []byte, want ...int) error {
	for _, w := range want {
		if status == w {
			return nil
		}
	}
	return fmt.Errorf("%s %s: HTTP %d: %s", method, path, status, truncate(string(bytes.TrimSpace(body)), 300))
}
