package workers_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/mongokv"
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

func (s *dualSink) CompareReads(_ context.Context, _ string, reads []ingest.Read) error {
	s.mu.Lock()
	s.reads += len(reads)
	s.mu.Unlock()
	return nil
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
		keys = append(keys, res.Keys...)
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
// settling verifies every key; afterwards MongoDB holds exactly what the
// binding holds.
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
	h, err := ingest.New(sink, ingest.Config{Token: token, DefaultNamespace: "ns"})
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
		Primary: primary, Shadow: shadow, Stage: dualwrite.DualWrite,
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
	if err := store.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}

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
