package ingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/ingest"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/membudget"
)

var start = time.Unix(1_796_000_000, 0)

const token = "ingest-token"

// recorder is a Sink that keeps what it is given, failing when told to.
type recorder struct {
	mu     sync.Mutex
	calls  int
	ns     []string
	copies []ingest.Copy
	err    error
}

func (r *recorder) Ingest(_ context.Context, ns string, copies []ingest.Copy) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.err != nil {
		return r.err
	}
	r.ns = append(r.ns, ns)
	r.copies = append(r.copies, copies...)
	return nil
}

// readRecorder also takes reads.
type readRecorder struct {
	recorder
	reads []ingest.Read
}

func (r *readRecorder) CompareReads(_ context.Context, _ string, reads []ingest.Read) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads = append(r.reads, reads...)
	return len(reads), nil
}

type stages map[string]ingest.Authority

func (s stages) Authority(_ context.Context, ns string) (ingest.Authority, error) {
	a, ok := s[ns]
	if !ok {
		return ingest.Authority{}, fmt.Errorf("namespace %q: %w", ns, ingest.ErrUnknownNamespace)
	}
	return a, nil
}

func newHandler(t *testing.T, sink ingest.Sink, mod func(*ingest.Config)) *ingest.Handler {
	t.Helper()
	cfg := ingest.Config{Token: token, DefaultNamespace: "ns", Clock: clock.NewFake(start)}
	if mod != nil {
		mod(&cfg)
	}
	h, err := ingest.New(sink, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func post(t *testing.T, h http.Handler, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/kvshadow/v1/ingest", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func errorCode(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var b struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(w.Body.Bytes(), &b); err != nil {
		t.Fatalf("error body %q: %v", w.Body.String(), err)
	}
	return b.Error.Code
}

var ms = start.UnixMilli()

func TestIngestHandsOnACheckedBatchInOrder(t *testing.T) {
	sink := &readRecorder{}
	h := newHandler(t, sink, nil)
	body := fmt.Sprintf(`{"namespace":"bot-ns","copies":[
		{"key":"wordle:games:42","value":"AP9B","expiration":%d,"metadata":{"a":1},"acked_at":%d},
		{"key":"wordle:old","deleted":true,"acked_at":%d,"generation":7},
		{"key":"wordle:games:42","value":"","acked_at":%d}],
	 "reads":[{"key":"wordle:r","found":true,"sha256":"%s","length":3,"expiration":%d,"read_at":%d},
		{"key":"wordle:none","found":false,"read_at":%d}]}`,
		start.Unix()+120, ms-3, ms-2, ms-1, strings.Repeat("ab", 32), start.Unix()+600, ms, ms)
	w := post(t, h, body)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	var res ingest.Result
	if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil || res != (ingest.Result{Copies: 3, Reads: 2}) {
		t.Fatalf("result %s (%v)", w.Body, err)
	}
	if len(sink.ns) != 1 || sink.ns[0] != "bot-ns" {
		t.Fatalf("namespaces %q", sink.ns)
	}
	c := sink.copies
	if len(c) != 3 || c[0].Key != "wordle:games:42" || !bytes.Equal(c[0].Value, []byte{0, 0xff, 0x41}) ||
		!c[0].Expiration.Equal(start.Add(120*time.Second)) || string(c[0].Metadata) != `{"a":1}` || !c[0].AckedAt.Equal(time.UnixMilli(ms-3)) {
		t.Fatalf("copy 0 = %+v", c[0])
	}
	if !c[1].Deleted || c[1].Value != nil || c[1].Key != "wordle:old" || c[1].Generation != 7 || c[0].Generation != 0 {
		t.Fatalf("copy 1 = %+v", c[1])
	}
	if c[2].Deleted || c[2].Value == nil || len(c[2].Value) != 0 || !c[2].Expiration.IsZero() || c[2].Metadata != nil {
		t.Fatalf("copy 2 (empty value, no expiry) = %+v", c[2])
	}
	r := sink.reads
	if len(r) != 2 || !r[0].Found || r[0].SHA256[0] != 0xab || r[0].Length != 3 || !r[0].Expiration.Equal(start.Add(600*time.Second)) || r[1].Found {
		t.Fatalf("reads = %+v", r)
	}
}

func TestIngestDefaultNamespaceAndReadsWithoutAReadSink(t *testing.T) {
	sink := &recorder{}
	h := newHandler(t, sink, nil)
	w := post(t, h, fmt.Sprintf(`{"copies":[{"key":"k","value":"dg==","acked_at":%d}],"reads":[{"key":"k","found":false,"read_at":%d}]}`, ms, ms))
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"reads":0,"reads_ignored":1`) {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if len(sink.ns) != 1 || sink.ns[0] != "ns" {
		t.Fatalf("namespace %q, want the default", sink.ns)
	}
	h = newHandler(t, sink, func(c *ingest.Config) { c.DefaultNamespace = "" })
	if w := post(t, h, `{"copies":[]}`); w.Code != http.StatusBadRequest {
		t.Fatalf("no namespace and no default: status %d", w.Code)
	}
}

func TestIngestRefusesBadBatchesWhole(t *testing.T) {
	hex := strings.Repeat("0", 64)
	copyWith := func(s string) string { return `{"copies":[{"key":"ok","value":"dg==","acked_at":1},` + s + `]}` }
	cases := map[string]string{
		"not JSON":            `{"copies":`,
		"unknown field":       `{"copies":[],"extra":1}`,
		"trailing data":       `{"copies":[]} {}`,
		"array":               `[]`,
		"bad namespace":       `{"namespace":"a/b","copies":[]}`,
		"no key":              copyWith(fmt.Sprintf(`{"value":"dg==","acked_at":%d}`, ms)),
		"empty key":           copyWith(fmt.Sprintf(`{"key":"","value":"dg==","acked_at":%d}`, ms)),
		"dot key":             copyWith(fmt.Sprintf(`{"key":"..","value":"dg==","acked_at":%d}`, ms)),
		"long key":            copyWith(fmt.Sprintf(`{"key":"%s","value":"dg==","acked_at":%d}`, strings.Repeat("k", 513), ms)),
		"no value":            copyWith(fmt.Sprintf(`{"key":"k","acked_at":%d}`, ms)),
		"bad base64":          copyWith(fmt.Sprintf(`{"key":"k","value":"%%%%","acked_at":%d}`, ms)),
		"delete with value":   copyWith(fmt.Sprintf(`{"key":"k","deleted":true,"value":"dg==","acked_at":%d}`, ms)),
		"bad metadata":        copyWith(fmt.Sprintf(`{"key":"k","value":"dg==","metadata":"%s","acked_at":%d}`, strings.Repeat("m", 1100), ms)),
		"no acked_at":         copyWith(`{"key":"k","value":"dg=="}`),
		"future acked_at":     copyWith(fmt.Sprintf(`{"key":"k","value":"dg==","acked_at":%d}`, start.Add(time.Hour).UnixMilli())),
		"negative expiration": copyWith(fmt.Sprintf(`{"key":"k","value":"dg==","expiration":-5,"acked_at":%d}`, ms)),
		"far expiration":      copyWith(fmt.Sprintf(`{"key":"k","value":"dg==","expiration":%d,"acked_at":%d}`, start.Add(kv.MaxTTL+time.Hour).Unix(), ms)),
		"wrong type":          copyWith(`{"key":7,"value":"dg==","acked_at":1}`),
		"negative generation": copyWith(fmt.Sprintf(`{"key":"k","value":"dg==","acked_at":%d,"generation":-1}`, ms)),
		"short sha":           fmt.Sprintf(`{"reads":[{"key":"k","found":true,"sha256":"ab","length":1,"read_at":%d}]}`, ms),
		"non-hex sha":         fmt.Sprintf(`{"reads":[{"key":"k","found":true,"sha256":"%s","length":1,"read_at":%d}]}`, strings.Repeat("zz", 32), ms),
		"miss with sha":       fmt.Sprintf(`{"reads":[{"key":"k","found":false,"sha256":"%s","read_at":%d}]}`, hex, ms),
		"negative length":     fmt.Sprintf(`{"reads":[{"key":"k","found":true,"sha256":"%s","length":-1,"read_at":%d}]}`, hex, ms),
		"read without key":    fmt.Sprintf(`{"reads":[{"found":false,"read_at":%d}]}`, ms),
		"read without time":   `{"reads":[{"key":"k","found":false}]}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			sink := &readRecorder{}
			w := post(t, newHandler(t, sink, nil), body)
			if w.Code != http.StatusBadRequest || errorCode(t, w) != "invalid_batch" {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			if sink.calls != 0 || len(sink.reads) != 0 {
				t.Fatalf("a refused batch reached the sink")
			}
			if strings.Contains(w.Body.String(), "kkkk") || strings.Contains(w.Body.String(), "dg==") {
				t.Fatalf("the error quotes the input: %s", w.Body)
			}
		})
	}
}

func TestIngestCaps(t *testing.T) {
	sink := &recorder{}
	h := newHandler(t, sink, func(c *ingest.Config) { c.MaxCopies, c.MaxReads, c.MaxBodyBytes = 2, 1, 4096 })
	three := fmt.Sprintf(`{"copies":[{"key":"a","deleted":true,"acked_at":%d},{"key":"b","deleted":true,"acked_at":%d},{"key":"c","deleted":true,"acked_at":%d}]}`, ms, ms, ms)
	two := fmt.Sprintf(`{"reads":[{"key":"a","found":false,"read_at":%d},{"key":"b","found":false,"read_at":%d}]}`, ms, ms)
	big := fmt.Sprintf(`{"copies":[{"key":"a","value":"%s","acked_at":%d}]}`, strings.Repeat("A", 5000), ms)
	for name, body := range map[string]string{"copies": three, "reads": two, "body": big} {
		if w := post(t, h, body); w.Code != http.StatusRequestEntityTooLarge || errorCode(t, w) != "too_large" {
			t.Errorf("%s over the cap: status %d: %s", name, w.Code, w.Body)
		}
	}
	// A body sent without a length is cut at the cap as it streams.
	req := httptest.NewRequest(http.MethodPost, "/ingest", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("streamed body over the cap: status %d", w.Code)
	}
	// A declared length over the cap is refused before reading.
	req = httptest.NewRequest(http.MethodPost, "/ingest", strings.NewReader("{}"))
	req.ContentLength = 999_999
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("declared length over the cap: status %d", w.Code)
	}
	if sink.calls != 0 {
		t.Fatalf("a batch over a cap reached the sink")
	}
}

func TestIngestRequestsItRefuses(t *testing.T) {
	sink := &recorder{}
	h := newHandler(t, sink, nil)
	for _, tc := range []struct {
		name, method, path, auth, ctype string
		status                          int
	}{
		{"no token", "POST", "/ingest", "", "application/json", 401},
		{"wrong token", "POST", "/ingest", "Bearer nope", "application/json", 401},
		{"GET ingest", "GET", "/ingest", "Bearer " + token, "application/json", 405},
		{"other path", "POST", "/other", "Bearer " + token, "application/json", 404},
		{"form body", "POST", "/ingest", "Bearer " + token, "text/plain", 415},
		{"no stage reader", "GET", "/stage", "Bearer " + token, "", 404},
		{"POST stage", "POST", "/stage", "Bearer " + token, "", 405},
	} {
		req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(`{"copies":[]}`))
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		req.Header.Set("Content-Type", tc.ctype)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, w.Code, tc.status)
		}
	}
	if sink.calls != 0 {
		t.Fatal("a refused request reached the sink")
	}
}

func TestIngestSinkErrors(t *testing.T) {
	body := fmt.Sprintf(`{"copies":[{"key":"k","deleted":true,"acked_at":%d}]}`, ms)
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("ns x: %w", ingest.ErrUnknownNamespace), 404, "unknown_namespace"},
		{fmt.Errorf("%w: %w", ingest.ErrStage, errors.New("dualwrite: the stage takes no ingested writes")), 409, "stage"},
		{kv.Unavailable("mongodb", 7*time.Second, errors.New("down")), 503, "unavailable"},
		{errors.New("secret key wordle:42 broke"), 500, "internal"},
	} {
		w := post(t, newHandler(t, &recorder{err: tc.err}, nil), body)
		if w.Code != tc.status || errorCode(t, w) != tc.code {
			t.Errorf("%v: status %d: %s", tc.err, w.Code, w.Body)
		}
		if strings.Contains(w.Body.String(), "wordle") {
			t.Errorf("the sink's message was forwarded: %s", w.Body)
		}
		if tc.status == 503 && w.Header().Get("Retry-After") != "7" {
			t.Errorf("Retry-After = %q, want 7", w.Header().Get("Retry-After"))
		}
	}
}

func TestStage(t *testing.T) {
	h := newHandler(t, &recorder{}, func(c *ingest.Config) {
		c.Stage = stages{
			"ns":       {Stage: "dualwrite", Account: "acc", Namespace: "ns", Generation: 3},
			"handover": {Stage: "handover", ThroughProxy: true, Generation: 4},
			"live":     {Stage: "live", ShadowAuthoritative: true, ThroughProxy: true},
		}
	})
	get := func(q string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/kvshadow/v1/stage"+q, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	if w := get(""); w.Code != 200 || w.Body.String() != `{"stage":"dualwrite","generation":3,"account":"acc","namespace":"ns","authoritative":"primary","route":"binding"}` {
		t.Fatalf("default stage: %d %s", w.Code, w.Body)
	}
	// From handover on the tee routes through the proxy, while Workers KV
	// stays authoritative until live.
	if w := get("?namespace=handover"); w.Code != 200 || !strings.Contains(w.Body.String(), `"authoritative":"primary","route":"proxy"`) {
		t.Fatalf("handover stage: %d %s", w.Code, w.Body)
	}
	if w := get("?namespace=live"); w.Code != 200 || !strings.Contains(w.Body.String(), `"authoritative":"shadow","route":"proxy"`) {
		t.Fatalf("live stage: %d %s", w.Code, w.Body)
	}
	if w := get("?namespace=nope"); w.Code != 404 {
		t.Fatalf("unknown namespace: %d", w.Code)
	}
	if w := get("?namespace=a/b"); w.Code != 400 {
		t.Fatalf("bad namespace: %d", w.Code)
	}
}

func TestNewRefusesConfigs(t *testing.T) {
	for name, tc := range map[string]struct {
		sink ingest.Sink
		cfg  ingest.Config
	}{
		"nil sink":    {nil, ingest.Config{Token: token}},
		"no token":    {&recorder{}, ingest.Config{}},
		"space token": {&recorder{}, ingest.Config{Token: "a b"}},
		"bad default": {&recorder{}, ingest.Config{Token: token, DefaultNamespace: "a/b"}},
	} {
		if _, err := ingest.New(tc.sink, tc.cfg); !errors.Is(err, ingest.ErrConfig) {
			t.Errorf("%s: err = %v, want ErrConfig", name, err)
		}
	}
}

// TestIngestDrawsFromTheMemoryBudget: a batch is charged as it is read; one
// the budget cannot pay for, because other requests hold it, is answered 503
// with Retry-After, and reaches no sink; once they give it back, it is taken.
func TestIngestDrawsFromTheMemoryBudget(t *testing.T) {
	mem, err := membudget.New(membudget.Config{Limit: 64 << 20, Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	sink := &recorder{}
	h := newHandler(t, sink, func(c *ingest.Config) { c.Memory = mem })
	batch := fmt.Sprintf(`{"copies":[{"key":"a","value":"%s","acked_at":%d}]}`, strings.Repeat("A", 4<<20), ms)
	if err := mem.Acquire(context.Background(), mem.Limit()-4<<20); err != nil { // held by the requests under way
		t.Fatal(err)
	}
	w := post(t, h, batch)
	if w.Code != http.StatusServiceUnavailable || errorCode(t, w) != "unavailable" || w.Header().Get("Retry-After") == "" {
		t.Fatalf("a batch past the budget: %d %s", w.Code, w.Body)
	}
	if sink.calls != 0 || mem.InUse() != mem.Limit()-4<<20 {
		t.Fatalf("sink calls %d, in use %d: the refused batch kept bytes or reached the sink", sink.calls, mem.InUse())
	}
	mem.Release(mem.Limit() - 4<<20)
	if w := post(t, h, batch); w.Code != http.StatusOK || sink.calls != 1 || mem.InUse() != 0 {
		t.Fatalf("with the budget free: %d %s, calls %d, in use %d", w.Code, w.Body, sink.calls, mem.InUse())
	}
}

// A key under kv.ReservedPrefix (the stage key, which isolates cut off from
// the proxy trust), in a copy or a read, however the JSON spells it, refuses
// its batch whole: 400 reserved_key, counted, the sink never called.
func TestIngestRefusesReservedKeys(t *testing.T) {
	sink := &readRecorder{}
	h := newHandler(t, sink, nil)
	var n uint64
	for _, key := range []string{`__kvshadow:stage`, `\u005f\u005fkvshadow\u003astage`, `__kvshadow:outbox`, `__kvshadow:`} {
		for _, item := range []string{
			fmt.Sprintf(`"copies":[{"key":"wordle:a","value":"dg==","acked_at":%d},{"key":"%s","value":"c2hhZG93","acked_at":%d}]`, ms, key, ms),
			fmt.Sprintf(`"copies":[{"key":"%s","deleted":true,"acked_at":%d}]`, key, ms),
			fmt.Sprintf(`"reads":[{"key":"%s","found":false,"read_at":%d}]`, key, ms),
		} {
			w := post(t, h, "{"+item+"}")
			n++
			if w.Code != http.StatusBadRequest || errorCode(t, w) != "reserved_key" || !strings.Contains(w.Body.String(), kv.ReservedPrefix) {
				t.Fatalf("%s: status %d: %s", item, w.Code, w.Body)
			}
			if sink.calls != 0 || len(sink.reads) != 0 {
				t.Fatalf("%s: a refused batch reached the sink", item)
			}
		}
	}
	if got := h.Refused()["reserved_key"]; got != n {
		t.Fatalf("Refused()[reserved_key] = %d, want %d", got, n)
	}
	if _, err := ingest.Decode(strings.NewReader(fmt.Sprintf(`{"copies":[{"key":"__kvshadow:stage","value":"","acked_at":%d}]}`, ms)), ingest.Config{}, start); !errors.Is(err, kv.ErrReservedKey) ||
		!errors.Is(err, ingest.ErrInvalidBatch) || !errors.Is(err, kv.ErrInvalidKey) {
		t.Fatalf("Decode: %v", err)
	}
}
