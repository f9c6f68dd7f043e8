package workers_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/ingest"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/tests/mongotest"
)

// dualSink is the proxy's sink (ingest.DualWrite) that also counts what
// it is handed.
type dualSink struct {
	ingest.DualWrite
	mu     sync.Mutex
	copies int
	reads  int
}

func (s *dualSink) Ingest(ctx context.Context, ns string, copies []ingest.Copy) error {
	if err := s.DualWrite.Ingest(ctx, ns, copies); err != nil {
		return err
	}
	s.mu.Lock()
	s.copies += len(copies)
	s.mu.Unlock()
	return nil
}

func (s *dualSink) CompareReads(ctx context.Context, ns string, reads []ingest.Read) (int, error) {
	n, err := s.DualWrite.CompareReads(ctx, ns, reads)
	if err != nil {
		return n, err
	}
	s.mu.Lock()
	s.reads += len(reads)
	s.mu.Unlock()
	return n, nil
}

func (s *dualSink) count() (copies, reads int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.copies, s.reads
}

// everything reads every key of st with its value and expiry.
func everything(t *testing.T, st kv.Store) map[string]kv.Entry {
	t.Helper()
	ctx := context.Background()
	var keys []string
	cursor := ""
	for {
		res, err := st.List(ctx, kv.ListOptions{Cursor: cursor})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		for _, k := range res.Keys {
			if !strings.HasPrefix(k, kv.ReservedPrefix) { // kvshadow's own, in the bot's namespace
				keys = append(keys, k)
			}
		}
		if res.Done {
			break
		}
		cursor = res.Cursor
	}
	out := map[string]kv.Entry{}
	for chunk := range slices.Chunk(keys, 100) {
		entries, err := st.(kv.BulkGetter).GetMany(ctx, chunk)
		if err != nil {
			t.Fatalf("GetMany: %v", err)
		}
		for _, e := range entries {
			out[e.Key] = e
		}
	}
	return out
}

// until calls f every 100 ms until it returns true or d passes: the tee's
// batches and the lanes' copies arrive after the bot's responses.
func until(d time.Duration, f func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		if f() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// TestTeeEndToEnd: a bot Worker in workerd writes its own binding through
// the tee; the copies reach the ingest handler over HTTP and the
// dual-write store ingests them (primary: cfkv through the bridge Worker
// over that same binding; shadow: the embedded MongoDB-compatible server);
// the tee's sampled reads are compared with MongoDB by digest, and none is
// a divergence; settling verifies every key; afterwards MongoDB holds
// exactly what the binding holds. Then a value changed in MongoDB behind
// the layer is found by the digest of one read through the tee: suspected,
// confirmed by the verification after the window, and repaired.
func TestTeeEndToEnd(t *testing.T) {
	mongo := mongotest.New(t)
	shadow := shadowStore(t, mongo, mongo.Database(t))
	const updates = 120
	// The store is made once the bridge is up, while the handler already
	// serves: it is published through an atomic pointer.
	var current atomic.Pointer[dualwrite.Store]
	sink := &dualSink{DualWrite: ingest.DualWrite{Stores: func(string) (*dualwrite.Store, bool) {
		st := current.Load()
		return st, st != nil
	}}}
	token := newToken()
	h, err := ingest.New(sink, ingest.Config{Token: token, DefaultNamespace: "ns", Stage: sink})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/kvshadow/v1/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	bridgeToken := newToken()
	bot := startNode(t, "run-bot.js", []string{
		"KVSHADOW_MODE=tee",
		"KVSHADOW_URL=" + srv.URL, "KVSHADOW_TOKEN=" + token, "KVSHADOW_BRIDGE_TOKEN=" + bridgeToken,
		"KVSHADOW_UPDATES=" + strconv.Itoa(updates),
	})
	var ready struct {
		Bridge string `json:"bridge"`
	}
	bot.next(&ready, 3*time.Minute)
	primary := bridge{URL: ready.Bridge, Account: "acc", Namespace: "ns", Token: bridgeToken}.store(t)
	store, err := dualwrite.New(dualwrite.Config{
		Primary: primary, Shadow: shadow, Stage: dualwrite.Shadow, CompareRate: 1,
		ConsistencyWindow: -1,        // miniflare's binding reads its own writes at once
		RepairInterval:    time.Hour, // the test runs the passes itself
	})
	if err != nil {
		t.Fatal(err)
	}
	current.Store(store)
	bot.say("go")
	var run struct {
		Writes      int `json:"writes"`
		Invocations int `json:"invocations"`
	}
	bot.next(&run, 5*time.Minute)
	if !until(time.Minute, func() bool { c, _ := sink.count(); return c >= run.Writes }) {
		c, _ := sink.count()
		t.Fatalf("ingested %d copies of %d writes", c, run.Writes)
	}
	ctx := context.Background()
	settled := until(time.Minute, func() bool {
		if _, err := store.Settle(ctx); err != nil {
			t.Fatalf("Settle: %v", err)
		}
		st := store.Stats()
		return st.Unsettled == 0 && st.Dirty == 0
	})
	st := store.Stats()
	if !settled {
		t.Fatalf("after settling: %d unsettled, %d dirty keys", st.Unsettled, st.Dirty)
	}
	// Under load every organic read may race a write of its own invocation
	// (inconclusive, as it must be); that a read matches and that a
	// difference is found is shown by changedBehind, once the traffic is over.
	if st.TeeReads == 0 || st.Confirmed != 0 || st.Divergences() != 0 {
		t.Fatalf("sampled reads: %d compared, comparisons %v, %d confirmed, %d divergences", st.TeeReads, st.Comparisons, st.Confirmed, st.Divergences())
	}
	t.Logf("%d sampled reads compared: %d match, %d suspected, %d inconclusive, %d pending; %d suspicions cleared",
		st.TeeReads, st.Comparisons[compare.Match], st.Comparisons[compare.Suspected], st.Comparisons[compare.Inconclusive], st.Comparisons[compare.Pending], st.Cleared)

	want := everything(t, primary)
	got := everything(t, shadow)
	if len(want) < 20 {
		t.Fatalf("the traffic left only %d keys", len(want))
	}
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%q: in the binding, missing in MongoDB", k)
		case !bytes.Equal(g.Value, w.Value):
			t.Errorf("%q: MongoDB holds another value", k)
		case w.Expiration.IsZero() != g.Expiration.IsZero():
			t.Errorf("%q: expiry %v in the binding, %v in MongoDB", k, w.Expiration, g.Expiration)
		case g.Expiration.Sub(w.Expiration).Abs() > time.Second:
			// The tee computes a TTL's expiry when the binding acknowledges
			// the write: within a second of the binding's own.
			t.Errorf("%q: expiry %v in the binding, %v in MongoDB", k, w.Expiration, g.Expiration)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%q: in MongoDB, not in the binding", k)
		}
	}
	copies, reads := sink.count()
	if reads == 0 {
		t.Errorf("no sampled read reached the handler")
	}
	t.Logf("%d invocations, %d writes, %d copies ingested, %d keys, %d sampled reads", run.Invocations, run.Writes, copies, len(want), reads)

	changedBehind(t, bot, store, primary, shadow, want)
	if err := store.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// changedBehind changes one key's value in MongoDB behind the layer, has
// the bot read it once through the tee, and checks that the read's digest
// finds the difference: suspected, confirmed by the verification after the
// window (none here: miniflare reads its own writes), then repaired.
func changedBehind(t *testing.T, bot *nodeScript, store *dualwrite.Store, primary, shadow kv.Store, keys map[string]kv.Entry) {
	t.Helper()
	ctx := context.Background()
	var key string
	for k, e := range keys {
		if e.Expiration.IsZero() && (key == "" || k < key) {
			key = k // a key without expiry, which the traffic, now over, left alone
		}
	}
	if key == "" {
		t.Fatal("no key without expiry to change")
	}
	probe := func() dualwrite.Stats {
		t.Helper()
		before := store.Stats()
		bot.say("read " + key)
		var read struct {
			Found bool `json:"found"`
		}
		bot.next(&read, time.Minute)
		if !read.Found {
			t.Fatalf("the bot did not find %q", key)
		}
		if !until(time.Minute, func() bool { return store.Stats().TeeReads > before.TeeReads }) {
			t.Fatal("the probe's read never reached the store")
		}
		if err := store.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		return before
	}
	// A read of a key both stores agree on matches.
	before := probe()
	if st := store.Stats(); st.Comparisons[compare.Match] != before.Comparisons[compare.Match]+1 {
		t.Fatalf("a read of a settled key: comparisons %v (before %v), want one more match", st.Comparisons, before.Comparisons)
	}
	if err := shadow.Put(ctx, key, []byte(`{"changed":"behind the layer"}`), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	before = probe()
	st := store.Stats()
	if st.Comparisons[compare.Suspected] != before.Comparisons[compare.Suspected]+1 || st.Confirmed != 0 || st.Suspects != 1 || st.Unsettled != 0 {
		t.Fatalf("after the read: comparisons %v (before %v), %d confirmed, %d suspects, %d unsettled", st.Comparisons, before.Comparisons, st.Confirmed, st.Suspects, st.Unsettled)
	}
	if _, err := store.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if st := store.Stats(); st.Confirmed != 1 || st.Divergences() != 1 {
		t.Fatalf("after the verification: %d confirmed, %d divergences", st.Confirmed, st.Divergences())
	}
	repaired := until(time.Minute, func() bool {
		store.RepairDirty()
		_ = store.Flush(ctx)
		got, err := shadow.Get(ctx, key)
		return err == nil && bytes.Equal(got, keys[key].Value)
	})
	if !repaired {
		t.Fatalf("%q was not repaired from the primary", key)
	}
	if v, err := primary.Get(ctx, key); err != nil || !bytes.Equal(v, keys[key].Value) {
		t.Fatalf("the primary changed: %q, %v", v, err)
	}
}

// shadowStore is mongokv over database db of the embedded server.
func shadowStore(t *testing.T, mongo *mongotest.Server, db string) *mongokv.Store {
	t.Helper()
	client, err := mongokv.NewClient(mongokv.ClientConfig{URI: mongo.URI()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close(context.Background()) })
	st, err := client.Store(mongokv.Config{Database: db})
	if err != nil {
		t.Fatal(err)
	}
	return st
}
