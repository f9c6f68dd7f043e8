package proxy_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/kv"
)

// The forwarder is the least a proxy's hop can cost: a process that passes
// each request to the primary with a bare net/http client and streams the
// answer back (no routing, no token check, no store, no copy to a shadow).
// Where the floor (floor_test.go) answers at once, the forwarder, like the
// proxy, waits for the primary: with the primary 3 ms away its threads
// sleep through the wait and must wake for the answer as well as for the
// request. BenchmarkProxyLatency measures it beside the proxy, through the
// same client, so that what the proxy costs beyond any forwarder's hop is
// read off the same run.

// forwarded are the response headers the forwarder passes on: those the
// emulator sets that a client reads.
var forwarded = []string{"Content-Type", "Content-Length", "Expiration", "Cf-Kv-Metadata"}

// serveForwarder is the forwarder's process over primary, the emulator's
// base URL (see serveChild).
func serveForwarder(primary string) ([]string, func(), error) {
	up, err := url.Parse(primary)
	if err != nil {
		return nil, nil, err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	base := up.Scheme + "://" + up.Host
	u, stop, err := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.RequestURI(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.ContentLength = r.ContentLength
		for _, h := range []string{"Authorization", "Content-Type"} {
			if v := r.Header.Get(h); v != "" {
				req.Header.Set(h, v)
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for _, h := range forwarded {
			if v := resp.Header.Get(h); v != "" {
				w.Header().Set(h, v)
			}
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	return []string{u + strings.TrimPrefix(primary, base)}, stop, err
}

// serveSDKForwarder is the SDK forwarder's process over primary: a value's
// GET and PUT passed on through cfkv, the proxy's own client to its primary
// (cloudflare-go over net/http), and nothing else (no routing beyond the
// key, no token check, no store, no copy). Beside the forwarder it shows
// what the SDK alone costs a hop: the part of the proxy's cost above the
// forwarder that any client of Workers KV through cloudflare-go pays.
func serveSDKForwarder(primary string) ([]string, func(), error) {
	store, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: primaryToken, BaseURL: primary, MaxRetries: -1})
	if err != nil {
		return nil, nil, err
	}
	const values = "/values/"
	u, stop, err := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, escaped, ok := strings.Cut(r.URL.EscapedPath(), values)
		key, kerr := url.PathUnescape(escaped)
		if !ok || kerr != nil {
			http.Error(w, "no key", http.StatusBadRequest)
			return
		}
		switch r.Method {
		case http.MethodGet:
			e, err := store.GetValue(r.Context(), key)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(e.Value)
		case http.MethodPut:
			value, err := io.ReadAll(r.Body)
			if err == nil {
				err = store.Put(r.Context(), key, value, kv.PutOptions{})
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"success":true,"errors":[],"messages":[],"result":null}`)
		default:
			http.Error(w, "not a value's GET or PUT", http.StatusMethodNotAllowed)
		}
	}))
	return []string{u + "/client/v4/"}, stop, err
}
