package service

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/kv"
)

// TestUnauthenticatedRefusesWebPages: without tokens (loopback only), what a
// web page in the operator's browser can send is refused on both listeners:
// a cross-origin text/plain POST, and any request under a DNS-rebinding
// host name; the same calls from a local tool still work.
func TestUnauthenticatedRefusesWebPages(t *testing.T) {
	r := start(t, "--unauthenticated-loopback")
	ctx := context.Background()
	st, err := cfkv.New(cfkv.Config{AccountID: r.c.Account, NamespaceID: DemoNamespace, APIToken: "unused", BaseURL: r.api, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "kept", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	front, _ := url.Parse(r.api)
	adminURL, _ := url.Parse(r.admin)
	bulkDelete := r.api + "accounts/" + DemoAccount + "/storage/kv/namespaces/" + DemoNamespace + "/bulk/delete"
	send := func(method, target, host string, h map[string]string, body string) int {
		t.Helper()
		req, err := http.NewRequest(method, target, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		for k, v := range h {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	page := map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}
	rebind := func(u *url.URL) string { return "rebind.evil.example:" + u.Port() }
	for _, c := range []struct {
		name, method, target, host string
		h                          map[string]string
		body                       string
	}{
		{"cross-origin POST /repair", "POST", r.admin + "repair", "", page, ""},
		{"cross-origin bulk/delete", "POST", bulkDelete, "", page, `["kept"]`},
		{"Origin alone, bulk/delete", "POST", bulkDelete, "", map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}, `["kept"]`},
		{"Sec-Fetch-Site alone, bulk/delete", "POST", bulkDelete, "", map[string]string{"Sec-Fetch-Site": "same-site"}, `["kept"]`},
		{"rebinding PUT /stage", "PUT", r.admin + "stage", rebind(adminURL), map[string]string{"Content-Type": "application/json"}, `{"stage":"dualwrite"}`},
		{"rebinding GET /unsettled", "GET", r.admin + "unsettled?keys=plain", rebind(adminURL), nil, ""},
		{"rebinding DELETE /instances/x", "DELETE", r.admin + "instances/x", rebind(adminURL), map[string]string{"Content-Type": "application/json"}, ""},
		{"rebinding bulk/delete", "POST", bulkDelete, rebind(front), nil, `["kept"]`},
		{"a loopback page of another port", "POST", bulkDelete, "", map[string]string{"Origin": "http://127.0.0.1:1"}, `["kept"]`},
	} {
		if code := send(c.method, c.target, c.host, c.h, c.body); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", c.name, code)
		}
	}
	if got, err := st.Get(ctx, "kept"); err != nil || string(got) != "v" {
		t.Fatalf("the key a page asked to delete: %v %q", err, got)
	}
	var v map[string]any
	if code := r.call(t, "GET", "/stage", "", &v); code != http.StatusOK {
		t.Fatalf("GET /stage from a local tool: %d", code)
	}
	// A local tool, and a page of the listener's own origin, are served.
	same := map[string]string{"Origin": "http://" + front.Host, "Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"}
	if code := send("POST", bulkDelete, "localhost:"+front.Port(), same, `["kept"]`); code != http.StatusOK {
		t.Fatalf("same-origin bulk/delete by the name localhost: %d", code)
	}
	if _, err := st.Get(ctx, "kept"); err == nil {
		t.Fatal("the same-origin delete did not delete")
	}
}
