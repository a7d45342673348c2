package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// GetJSON sends a GET for u with c (http.DefaultClient when nil) and
// decodes the JSON answer into out. An answer other than 200 OK, or one
// that does not decode, is an error that quotes the body (at most 64 MiB
// of it is read).
func GetJSON(ctx context.Context, c *http.Client, u string, out any) error {
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("GET %s: %w: %s", u, err, body)
	}
	return nil
}
