package workers_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/ingest"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/tests/mongotest"
)

// applySink applies each key's copies to the shadow in acknowledged order,
// skipping a copy older than one already applied (copies from concurrent
// invocations arrive in any order). It stands where the dual-write store's
// ingest goes in the proxy.
type applySink struct {
	shadow *mongokv.Store
	mu     sync.Mutex
	latest map[string]time.Time
	copies int
	reads  int
	want   int
	all    chan struct{}
}

func (s *applySink) Ingest(ctx context.Context, ns string, copies []ingest.Copy) error {
	for _, c := range copies {
		s.mu.Lock()
		stale := c.AckedAt.Before(s.latest[c.Key])
		if !stale {
			s.latest[c.Key] = c.AckedAt
		}
		s.mu.Unlock()
		if !stale {
			var err error
			switch {
			case c.Deleted:
				err = s.shadow.Delete(ctx, c.Key)
			default:
				err = kv.PutEntry(ctx, s.shadow, kv.Entry{Key: c.Key, Value: c.Value, Expiration: c.Expiration, Metadata: c.Metadata})
			}
			if err != nil {
				return err
			}
		}
		s.mu.Lock()
		s.copies++
		if s.copies == s.want {
			close(s.all)
		}
		s.mu.Unlock()
	}
	return nil
}

func (s *applySink) CompareReads(_ context.Context, _ string, reads []ingest.Read) error {
	s.mu.Lock()
	s.reads += len(reads)
	s.mu.Unlock()
	return nil
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

// TestTeeEndToEnd: a bot Worker in workerd writes its own binding through
// the tee; the copies reach the ingest handler over HTTP; afterwards
// MongoDB (the embedded server) holds exactly what the binding holds, read
// through cfkv and the bridge Worker over that same binding.
func TestTeeEndToEnd(t *testing.T) {
	mongo := mongotest.New(t)
	client, err := mongokv.NewClient(mongokv.ClientConfig{URI: mongo.URI()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close(context.Background()) })
	shadow, err := client.Store(mongokv.Config{Database: mongo.Database(t)})
	if err != nil {
		t.Fatal(err)
	}
	const updates = 120
	sink := &applySink{shadow: shadow, latest: map[string]time.Time{}, all: make(chan struct{})}
	token := newToken()
	h, err := ingest.New(sink, ingest.Config{Token: token, DefaultNamespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/kvshadow/v1/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	var run struct {
		Bridge      string `json:"bridge"`
		Writes      int    `json:"writes"`
		Invocations int    `json:"invocations"`
	}
	bridgeToken := newToken()
	sink.mu.Lock()
	sink.want = -1 // set once the traffic says how many writes it made
	sink.mu.Unlock()
	startNode(t, "run-tee-bot.js", []string{
		"KVSHADOW_URL=" + srv.URL, "KVSHADOW_TOKEN=" + token, "KVSHADOW_BRIDGE_TOKEN=" + bridgeToken,
		"KVSHADOW_UPDATES=" + strconv.Itoa(updates),
	}, &run)
	sink.mu.Lock()
	sink.want = run.Writes
	if sink.copies >= run.Writes {
		close(sink.all)
	}
	sink.mu.Unlock()
	select {
	case <-sink.all:
	case <-time.After(2 * time.Minute):
		t.Fatalf("ingested %d copies of %d writes", sink.copies, run.Writes)
	}

	primary := bridge{URL: run.Bridge, Account: "acc", Namespace: "ns", Token: bridgeToken}.store(t)
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
		case !w.Expiration.IsZero() && (g.Expiration.Sub(w.Expiration) > time.Second || w.Expiration.Sub(g.Expiration) > time.Second):
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
	if sink.reads == 0 {
		t.Errorf("no sampled read reached the handler")
	}
	t.Logf("%d invocations, %d writes, %d keys, %d sampled reads", run.Invocations, run.Writes, len(want), sink.reads)
}
