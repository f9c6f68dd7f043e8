package admin

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// Client calls an admin API: for operators' tools, the demo and tests.
type Client struct {
	// URL is the API's root, such as "http://127.0.0.1:8791/".
	URL string
	// Token is the admin token; empty sends none.
	Token string `json:"-"`
	// HTTP sends the requests; nil means a client with a 30 s timeout.
	HTTP *http.Client
}

// Error is an answer outside 2xx, with the API's message.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("admin API: %d: %s", e.Status, e.Message) }

var defaultHTTP = &http.Client{Timeout: 30 * time.Second}

// Do sends method path (relative to URL) with body, and decodes a JSON
// answer into out (when not nil) whatever its status, which it returns. An
// answer outside 2xx is also an *Error.
func (c *Client) Do(ctx context.Context, method, path, body string, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.URL, "/")+"/"+strings.TrimPrefix(path, "/"), strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if body != "" || (method != http.MethodGet && method != http.MethodHead) {
		req.Header.Set("Content-Type", "application/json") // the routes that change state require it
	}
	resp, err := cmp.Or(c.HTTP, defaultHTTP).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("admin API: %s %s: %w", method, path, err)
		}
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		return resp.StatusCode, &Error{Status: resp.StatusCode, Message: e.Error}
	}
	return resp.StatusCode, nil
}

// Stage reads GET /stage.
func (c *Client) Stage(ctx context.Context) (StageView, error) {
	var v StageView
	_, err := c.Do(ctx, http.MethodGet, "stage", "", &v)
	return v, err
}

// SetStage asks for a stage (PUT /stage). A move to complete, which cannot
// be undone, is refused without its confirmation: see SetStageConfirmed.
func (c *Client) SetStage(ctx context.Context, stage dualwrite.Stage) (ChangeView, error) {
	var v ChangeView
	_, err := c.Do(ctx, http.MethodPut, "stage", fmt.Sprintf(`{"stage":%q}`, stage), &v)
	return v, err
}

// SetStageConfirmed asks for a stage with "confirm_irreversible": true,
// which a move to complete requires: call it only where the operator has
// confirmed that Workers KV is no longer to be written.
func (c *Client) SetStageConfirmed(ctx context.Context, stage dualwrite.Stage) (ChangeView, error) {
	var v ChangeView
	_, err := c.Do(ctx, http.MethodPut, "stage", fmt.Sprintf(`{"stage":%q,"confirm_irreversible":true}`, stage), &v)
	return v, err
}

// Stats reads GET /stats.
func (c *Client) Stats(ctx context.Context) (StatsView, error) {
	var v StatsView
	_, err := c.Do(ctx, http.MethodGet, "stats", "", &v)
	return v, err
}

// Repair asks for a repair of the dirty keys now (POST /repair).
func (c *Client) Repair(ctx context.Context) error {
	_, err := c.Do(ctx, http.MethodPost, "repair", "", nil)
	return err
}
