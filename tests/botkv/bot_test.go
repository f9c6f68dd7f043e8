package botkv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/botkv"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/tests/proxytest"
)

// The bot's own store shape, sentinel and module wrapper, as in botkv's
// Example: what a Go bot already has.
type KVStore interface {
	Get(ctx context.Context, key string) ([]byte, error)
	GetJSON(ctx context.Context, key string, dst any) error
	Put(ctx context.Context, key string, val []byte) error
	PutJSON(ctx context.Context, key string, val any) error
	Delete(ctx context.Context, key string) error
	List(ctx context.Context, prefix string) ([]string, error)
}

var ErrNotFound = errors.New("storage: key not found")

type prefixed struct {
	inner  KVStore
	prefix string
}

func Prefixed(inner KVStore, module string) KVStore { return prefixed{inner, module + ":"} }

func (p prefixed) Get(ctx context.Context, k string) ([]byte, error) {
	return p.inner.Get(ctx, p.prefix+k)
}
func (p prefixed) GetJSON(ctx context.Context, k string, dst any) error {
	return p.inner.GetJSON(ctx, p.prefix+k, dst)
}
func (p prefixed) Put(ctx context.Context, k string, v []byte) error {
	return p.inner.Put(ctx, p.prefix+k, v)
}
func (p prefixed) PutJSON(ctx context.Context, k string, v any) error {
	return p.inner.PutJSON(ctx, p.prefix+k, v)
}
func (p prefixed) Delete(ctx context.Context, k string) error { return p.inner.Delete(ctx, p.prefix+k) }
func (p prefixed) List(ctx context.Context, prefix string) ([]string, error) {
	keys, err := p.inner.List(ctx, p.prefix+prefix)
	for i := range keys {
		keys[i] = strings.TrimPrefix(keys[i], p.prefix)
	}
	return keys, err
}

// rig is a bot's deployment in miniature: an emulated Workers KV account,
// a fresh database on the embedded server, and the environment a bot's
// process would be given.
type rig struct {
	primary *proxytest.Primary
	db      string
	env     map[string]string
}

func newRig(t testing.TB) *rig {
	p := proxytest.NewPrimary(t)
	r := &rig{primary: p, db: srv.Database(t)}
	r.env = p.Environment(srv.URI(), r.db)
	r.env["KVSHADOW_STAGE"] = "dualwrite"
	r.env["KVSHADOW_CONSISTENCY_WINDOW"] = "0" // the emulator reads its own writes at once
	r.env["KVSHADOW_JOURNAL_DIR"] = t.TempDir()
	r.env["KVSHADOW_INSTANCE"] = "bot-test"
	return r
}

func (r *rig) open(t *testing.T, over map[string]string) (*botkv.Store, error) {
	env := maps.Clone(r.env)
	maps.Copy(env, over)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	return botkv.Open(ctx, botkv.Config{Getenv: func(k string) string { return env[k] }}, botkv.WithLogger(slog.New(slog.DiscardHandler)))
}

type game struct {
	Word    string   `json:"word"`
	Guesses []string `json:"guesses"`
	Won     bool     `json:"won"`
}

// A module's worth of a bot's calls through the adapter over the real
// backends, then the wait until settled and a full comparison of both
// stores: 0 apart. The stage is the control document's, and the store
// follows its change.
func TestABotsModulesThroughTheAdapter(t *testing.T) {
	r := newRig(t)
	before := ours()
	st, err := r.open(t, nil)
	if err != nil {
		t.Fatalf("Open from the test environment: %v", err)
	}
	opened := ours()
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = st.Close(context.Background())
		}
	})
	if st.Stage() != dualwrite.DualWrite {
		t.Fatalf("stage %s, want KVSHADOW_STAGE's dualwrite (no stage document before)", st.Stage())
	}
	// The stage the bot runs is kept for a start without MongoDB.
	if got, known := control.LastStage(r.env["KVSHADOW_JOURNAL_DIR"]); !known || got != dualwrite.DualWrite {
		t.Errorf("the journal directory keeps %s (%v) after Open; want dualwrite", got, known)
	}
	kvs, err := st.Adapter(ErrNotFound)
	if err != nil {
		t.Fatal(err)
	}
	var store KVStore = kvs
	ctx := t.Context()

	model := map[string]map[string]string{} // module -> key -> the raw value it holds
	for _, module := range []string{"wordle", "loldle-emoji", "trading"} {
		m := Prefixed(store, module)
		held := map[string]string{}
		model[module] = held
		for i := range 30 {
			key := fmt.Sprintf("games:%03d", i)
			g := game{Word: "crane", Guesses: []string{"adieu", fmt.Sprint(i)}, Won: i%3 == 0}
			if err := m.PutJSON(ctx, key, g); err != nil {
				t.Fatalf("%s PutJSON: %v", module, err)
			}
			var back game
			if err := m.GetJSON(ctx, key, &back); err != nil || back.Guesses[1] != fmt.Sprint(i) {
				t.Fatalf("%s GetJSON(%s) = %+v, %v", module, key, back, err)
			}
			held[key] = fmt.Sprintf(`{"word":"crane","guesses":["adieu","%d"],"won":%v}`, i, i%3 == 0)
		}
		for i := range 10 {
			key := fmt.Sprintf("users:%d:name", i)
			val := []byte("ünïcode name " + fmt.Sprint(i))
			if err := m.Put(ctx, key, val); err != nil {
				t.Fatal(err)
			}
			got, err := m.Get(ctx, key)
			if err != nil || !bytes.Equal(got, val) {
				t.Fatalf("%s Get(%s) = %q, %v", module, key, got, err)
			}
			held[key] = string(val)
		}
		for i := range 30 {
			if i%4 == 0 {
				key := fmt.Sprintf("games:%03d", i)
				if err := m.Delete(ctx, key); err != nil {
					t.Fatal(err)
				}
				delete(held, key)
				if _, err := m.Get(ctx, key); err != ErrNotFound {
					t.Fatalf("%s Get of a deleted key = %v; want the bot's ErrNotFound itself", module, err)
				}
				var g game
				if err := m.GetJSON(ctx, key, &g); err != ErrNotFound {
					t.Fatalf("%s GetJSON of a deleted key = %v", module, err)
				}
			}
		}
		if err := m.Put(ctx, "games:corrupt", []byte(`{"word":`)); err != nil {
			t.Fatal(err)
		}
		held["games:corrupt"] = `{"word":`
		var g game
		if err := m.GetJSON(ctx, "games:corrupt", &g); err != ErrNotFound {
			t.Fatalf("GetJSON of a malformed record = %v; want ErrNotFound (kvshadow's contract)", err)
		}
		for _, prefix := range []string{"games:", "users:", "users:1", ""} {
			got, err := m.List(ctx, prefix)
			var want []string
			for k := range held {
				if strings.HasPrefix(k, prefix) {
					want = append(want, k)
				}
			}
			slices.Sort(want)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("%s List(%q) = %d keys %v, want %d", module, prefix, len(got), err, len(want))
			}
		}
	}
	if err := store.Put(ctx, strings.Repeat("k", kv.MaxKeySize+1), []byte("v")); !errors.Is(err, kv.ErrInvalidKey) {
		t.Fatalf("a 513-byte key: %v", err)
	}

	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	left, err := st.WaitSettled(wctx)
	if err != nil || !left.Settled() {
		t.Fatalf("WaitSettled = %+v, %v", left, err)
	}
	if s := st.Dual.Stats(); s.Drops != nil && sum(s.Drops) != 0 || s.Divergences() != 0 {
		t.Errorf("drops %v, divergences %d", s.Drops, s.Divergences())
	}
	apart := compareStores(t, r)
	if apart != 0 {
		t.Fatalf("%d keys apart after settling", apart)
	}

	// The operator moves the stage on the control document (as the proxy's
	// admin API does): the bot's store follows within a poll.
	board := r.board(t)
	doc, err := board.Load(ctx)
	if err != nil || doc.Stage != dualwrite.DualWrite || doc.Generation != 1 {
		t.Fatalf("stage document %+v, %v; want dualwrite at generation 1, written by the first instance", doc, err)
	}
	if err := board.Swap(ctx, 1, control.Document{Stage: dualwrite.Shadow, Generation: 2, UpdatedAt: time.Now(), UpdatedBy: "operator"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); st.Stage() != dualwrite.Shadow; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the store stayed in %s after the document moved to shadow", st.Stage())
		}
	}
	if got, known := control.LastStage(r.env["KVSHADOW_JOURNAL_DIR"]); !known || got != dualwrite.Shadow {
		t.Errorf("the journal directory keeps %s (%v) after the move to shadow; want shadow", got, known)
	}
	beats, err := board.Instances(ctx)
	if err != nil || len(beats) != 1 || beats[0].Instance != "bot-test" {
		t.Fatalf("heartbeats %+v, %v; want the bot's instance", beats, err)
	}

	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	closed = true
	if beats, err := board.Instances(ctx); err != nil || len(beats) != 0 {
		t.Errorf("after Close the board holds %+v, %v; a settled instance leaves", beats, err)
	}
	time.Sleep(100 * time.Millisecond) // the HTTP client's connections close in the background
	t.Logf("goroutines of kvshadow's packages and its HTTP connections: %d before Open, %d while open, %d after Close", before, opened, ours())
	if after := ours(); after != 0 {
		t.Errorf("Close left %d goroutines running", after)
	}
}

// ours counts the goroutines running kvshadow's code (the lanes, the
// Store's loops, the follower, the journal) or holding an HTTP connection
// of the primary's client.
func ours() int {
	buf := make([]byte, 4<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "kvshadow/kvshadow/dualwrite") || strings.Contains(g, "kvshadow/kvshadow/control") ||
			strings.Contains(g, "kvshadow/kvshadow/journal") || strings.Contains(g, "kvshadow/kvshadow/backends") ||
			strings.Contains(g, "net/http.(*persistConn)") {
			n++
		}
	}
	return n
}

func sum(m map[dualwrite.DropReason]uint64) (n uint64) {
	for _, v := range m {
		n += v
	}
	return n
}

func (r *rig) board(t *testing.T) *control.MongoBoard {
	c, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	return control.NewMongoBoard(c.Database(r.db))
}

// compareStores reads every key of both stores, the emulated account's
// and the database's, and counts the keys whose presence or value differ.
func compareStores(t *testing.T, r *rig) int {
	ctx := t.Context()
	client, err := mongokv.NewClient(mongokv.ClientConfig{URI: srv.URI(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close(context.Background())
	shadow, err := client.Store(mongokv.Config{Database: r.db})
	if err != nil {
		t.Fatal(err)
	}
	read := func(s kv.Store) map[string]string {
		out := map[string]string{}
		for cursor := ""; ; {
			res, err := s.List(ctx, kv.ListOptions{Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range res.Keys {
				v, err := s.Get(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				out[k] = string(v)
			}
			if res.Done {
				return out
			}
			cursor = res.Cursor
		}
	}
	p, s := read(r.primary.Store), read(shadow)
	if len(p) < 90 {
		t.Fatalf("the primary holds %d keys: the workload did not reach it", len(p))
	}
	apart := 0
	for k, v := range p {
		if w, ok := s[k]; !ok || w != v {
			apart++
		}
	}
	for k := range s {
		if _, ok := p[k]; !ok {
			apart++
		}
	}
	t.Logf("compared %d keys in the primary with %d in the shadow: %d apart", len(p), len(s), apart)
	return apart
}

// Started from a test environment with one variable wrong, Open names it
// and starts nothing.
func TestOpenFromATestEnvironmentNamesTheWrongVariable(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for name, value := range map[string]string{"KVSHADOW_STAGE": "dualwite", "MONGODB_DB": "miti99bot.prod", "CLOUDFLARE_BASE_URL": "127.0.0.1:8787/client/v4/"} {
		st, err := r.open(t, map[string]string{name: value})
		var ve *botkv.VarError
		if err == nil {
			_ = st.Close(context.Background())
		}
		if !errors.As(err, &ve) || ve.Name != name || !strings.Contains(err.Error(), name) {
			t.Errorf("Open with %s=%q: %v; want an error naming %s", name, value, err, name)
		}
	}
	if beats, err := r.board(t).Instances(t.Context()); err != nil || len(beats) != 0 {
		t.Errorf("a refused Open left %+v on the board (%v)", beats, err)
	}
}
