package cfkv_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// TestMetadataRequests: metadata reaches the server as one JSON value (not
// the SDK's flattened form fields), and costs no request more than a value
// alone, within the REST API's budget: one to write, one to read with the
// expiry and the metadata, one per 100 keys in bulk.
func TestMetadataRequests(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(start)
	r := newRig(t, clk, nil)
	md := json.RawMessage(`{"author":"wrangler","tags":["a","b"],"nested":{"n":1}}`)
	exp := start.Add(3 * time.Hour)
	count := func(what string, want int64, call func() error) {
		t.Helper()
		before := r.server.Requests()
		if err := call(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := r.server.Requests() - before; n != want {
			t.Errorf("%s made %d requests, want %d", what, n, want)
		}
	}

	count("PutEntry", 1, func() error {
		return r.store.PutEntry(ctx, kv.Entry{Key: "k", Value: []byte("v"), Expiration: exp, Metadata: md})
	})
	if got := rawMetadata(t, r, "k"); got != string(md) {
		t.Errorf("the server's /metadata/k = %s, want the object %s", got, md)
	}
	count("GetEntry", 1, func() error {
		e, err := r.store.GetEntry(ctx, "k")
		if err == nil && (string(e.Value) != "v" || string(e.Metadata) != string(md) || !e.Expiration.Equal(exp)) {
			err = errors.New("wrong entry: " + string(e.Value) + " " + string(e.Metadata) + " " + e.Expiration.String())
		}
		return err
	})
	count("Get", 1, func() error { _, err := r.store.Get(ctx, "k"); return err })

	// A value that is not UTF-8 is read again with its own GET, keeping the
	// metadata that only bulk/get returned.
	binary := []byte{0xff, 0x00, 0xfe}
	count("PutEntry of binary", 1, func() error {
		return r.store.PutEntry(ctx, kv.Entry{Key: "bin", Value: binary, Metadata: md})
	})
	count("GetEntry of binary", 2, func() error {
		e, err := r.store.GetEntry(ctx, "bin")
		if err == nil && (string(e.Value) != string(binary) || string(e.Metadata) != string(md)) {
			err = errors.New("wrong entry")
		}
		return err
	})

	entries := make([]kv.Entry, 100)
	keys := make([]string, 100)
	for i := range entries {
		keys[i] = "bulk:" + strings.Repeat("x", i)
		entries[i] = kv.Entry{Key: keys[i], Value: []byte("v"), Metadata: json.RawMessage(`{"i":` + string(rune('0'+i%10)) + `}`)}
	}
	count("PutMany of 100", 1, func() error { return r.store.PutMany(ctx, entries) })
	count("GetMany of 100", 1, func() error {
		got, err := r.store.GetMany(ctx, keys)
		for _, e := range got {
			if e.Metadata == nil {
				err = errors.New("an entry lost its metadata: " + e.Key)
			}
		}
		return err
	})

	// Invalid metadata never reaches the server.
	count("refused PutEntry", 0, func() error {
		err := r.store.PutEntry(ctx, kv.Entry{Key: "k", Value: []byte("v"), Metadata: json.RawMessage(`"` + strings.Repeat("m", kv.MaxMetadataSize) + `"`)})
		if !errors.Is(err, kv.ErrInvalidMetadata) {
			return errors.New("want kv.ErrInvalidMetadata")
		}
		return nil
	})
	count("refused PutMany", 0, func() error {
		err := r.store.PutMany(ctx, []kv.Entry{{Key: "k", Value: []byte("v"), Metadata: json.RawMessage(`{`)}})
		if !errors.Is(err, kv.ErrInvalidMetadata) {
			return errors.New("want kv.ErrInvalidMetadata")
		}
		return nil
	})
}

// rawMetadata reads a key's metadata from the server by plain HTTP, as any
// REST client would.
func rawMetadata(t *testing.T, r *rig, key string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, r.url+"/client/v4/accounts/"+testAccount+"/storage/kv/namespaces/"+testNamespace+"/metadata/"+key, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var env struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("metadata response %s: %v", body, err)
	}
	return string(env.Result)
}

// TestGetEntryWhereBulkReadIsRefused: the API documents bulk/get for text
// values only; where it refuses a key as a bad request, GetEntry reads the
// value and the metadata with their own GETs, two requests, and loses
// neither.
func TestGetEntryWhereBulkReadIsRefused(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(start)
	mem := memory.New(memory.Config{Clock: clk})
	srv, err := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{testNamespace: mem}, AccountID: testAccount, Token: testToken, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	var requests, refused atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if strings.HasSuffix(r.URL.Path, "/bulk/get") {
			refused.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"success":false,"errors":[{"code":10001,"message":"bulk get: the value is not text"}],"messages":[],"result":null}`)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	st, err := cfkv.New(cfkv.Config{AccountID: testAccount, NamespaceID: testNamespace, APIToken: testToken, BaseURL: hs.URL + "/client/v4/", HTTPClient: hs.Client(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	exp := start.Add(time.Hour)
	md := json.RawMessage(`{"kind":"binary"}`)
	if err := mem.PutEntry(ctx, kv.Entry{Key: "bin", Value: []byte{0xff, 0, 0xfe}, Expiration: exp, Metadata: md}); err != nil {
		t.Fatal(err)
	}
	e, err := st.GetEntry(ctx, "bin")
	if err != nil || string(e.Value) != "\xff\x00\xfe" || string(e.Metadata) != string(md) || !e.Expiration.Equal(exp) {
		t.Fatalf("GetEntry = %q, %s, %v, %v", e.Value, e.Metadata, e.Expiration, err)
	}
	if n, r := requests.Load(), refused.Load(); n != 3 || r != 1 {
		t.Errorf("%d requests (%d refused bulk reads), want the refused bulk read and two GETs", n, r)
	}
	if _, err := st.GetEntry(ctx, "missing"); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("GetEntry(missing) = %v, want kv.ErrNotFound", err)
	}
}
