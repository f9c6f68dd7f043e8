package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// seenLog is what a test saw, in order, taken in turns.
type seenLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *seenLog) add(s string) {
	l.mu.Lock()
	l.seen = append(l.seen, s)
	l.mu.Unlock()
}

// take returns what was seen since the last take.
func (l *seenLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.seen
	l.seen = nil
	return out
}

// requestLog records the requests an emulated Workers KV account serves, as
// "METHOD route" with the route after the namespace ("values/", "bulk/get").
type requestLog struct{ seenLog }

func (l *requestLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := r.URL.Path
		if _, rest, ok := strings.Cut(route, "/namespaces/"+namespace+"/"); ok {
			route = rest
			if name, _, ok := strings.Cut(rest, "/"); ok && (name == "values" || name == "metadata") {
				route = name + "/"
			}
		}
		l.add(r.Method + " " + route)
		h.ServeHTTP(w, r)
	})
}

// TestEveryRouteCostsThePrimaryOneRequestOfItsKind: a client's call through
// the proxy reaches the primary as one request of the same kind, never a
// heavier one: a value GET stays a value GET (not a bulk/get for metadata
// the route does not return), with the primary's Expiration header passed
// on. Stage dualwrite, no comparison, verification a window away: what the
// primary sees is the caller's own path alone.
func TestEveryRouteCostsThePrimaryOneRequestOfItsKind(t *testing.T) {
	store := memory.New(memory.Config{})
	api, err := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{namespace: store}, AccountID: account, Token: primaryToken})
	if err != nil {
		t.Fatal(err)
	}
	var log requestLog
	hs := httptest.NewServer(log.wrap(api))
	t.Cleanup(hs.Close)
	in := startOverMemoryShadow(t, hs.URL+"/client/v4/", []string{"--stage", "dualwrite", "--compare-rate", "0", "--consistency-window", "1h"})

	exp := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	if err := store.PutEntry(t.Context(), kv.Entry{Key: "wordle:a", Value: []byte{0xff, 'x'}, Expiration: exp, Metadata: []byte(`{"m":1}`)}); err != nil {
		t.Fatal(err)
	}
	if err := store.PutEntry(t.Context(), kv.Entry{Key: "wordle:t", Value: []byte("text"), Metadata: []byte(`{"m":2}`)}); err != nil {
		t.Fatal(err)
	}
	send := func(method, path, contentType, body string) *http.Response {
		t.Helper()
		return in.send(t, method, path, contentType, body)
	}

	log.take()
	resp := send("GET", "values/wordle:a", "", "")
	if got := log.take(); len(got) != 1 || got[0] != "GET values/" {
		t.Fatalf("a value GET through the proxy reached the primary as %q, want one value GET", got)
	}
	if h := resp.Header.Get("Expiration"); h != strconv.FormatInt(exp.Unix(), 10) {
		t.Fatalf("Expiration = %q, want %d", h, exp.Unix())
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "\xffx" {
		t.Fatalf("value = %q, want the bytes as stored", b)
	}

	for _, c := range []struct{ method, path, ctype, body, want string }{
		{"GET", "metadata/wordle:a", "", "", "GET metadata/"},
		{"PUT", "values/wordle:b", "application/octet-stream", "B", "PUT values/"},
		{"GET", "keys?prefix=wordle:", "", "", "GET keys"},
		{"PUT", "bulk", "application/json", `[{"key":"wordle:c","value":"C"}]`, "PUT bulk"},
		{"POST", "bulk/get", "application/json", `{"keys":["wordle:t","wordle:b"]}`, "POST bulk/get"},
		{"POST", "bulk/delete", "application/json", `["wordle:c"]`, "POST bulk/delete"},
		{"DELETE", "values/wordle:b", "", "", "DELETE values/"},
	} {
		send(c.method, c.path, c.ctype, c.body)
		if got := log.take(); len(got) != 1 || got[0] != c.want {
			t.Errorf("%s %s through the proxy reached the primary as %q, want one %s", c.method, c.path, got, c.want)
		}
	}
}

// send makes one call of the namespace's REST route path (after
// ".../namespaces/<id>/") through the instance's front, as a client with
// its token would, and fails the test unless it is answered 200.
func (in *instance) send(t *testing.T, method, path, contentType, body string) *http.Response {
	t.Helper()
	base := strings.TrimSuffix(in.api, "/") + "/accounts/" + account + "/storage/kv/namespaces/" + namespace + "/"
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+clientToken)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, b)
	}
	return resp
}
