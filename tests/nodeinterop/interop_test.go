package nodeinterop_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/tests/mongotest"
)

var srv *mongotest.Server

func TestMain(m *testing.M) { mongotest.Main(m, &srv) }

// op is one call of the bot's MongoKVStore, as run.js takes it.
type op struct {
	Op         string `json:"op"`
	Collection string `json:"collection"`
	Key        string `json:"key,omitempty"`
	Value      string `json:"value,omitempty"`
	JSON       any    `json:"json,omitempty"`
	TTL        int    `json:"ttl,omitempty"`
	Prefix     string `json:"prefix,omitempty"`
	Limit      int    `json:"limit,omitempty"`
}

// read is the answer of a get: the type the bot's code sees, and the
// string's bytes as length and digest (and the string when short).
type read struct {
	Type   string `json:"type"`
	Value  string `json:"value"`
	Length int    `json:"length"`
	SHA256 string `json:"sha256"`
}

// node runs ops through the bot's store in one Node.js process and returns
// its answers, one per op.
func node(t *testing.T, db string, ops []op) []json.RawMessage {
	t.Helper()
	bin, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: the interop test runs the bot's store on Node.js")
	}
	if _, err := os.Stat(filepath.Join("node_modules", "mongodb")); err != nil {
		t.Fatal("tests/nodeinterop/node_modules lacks the mongodb driver: run npm ci there (make integration does)")
	}
	in, err := json.Marshal(map[string]any{"uri": srv.URI(), "db": db, "ops": ops})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run.js")
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node run.js: %v\n%s", err, stderr.String())
	}
	var out []json.RawMessage
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out) != len(ops) {
		t.Fatalf("node answered %d results for %d ops (%v): %.500s", len(out), len(ops), err, stdout.String())
	}
	return out
}

func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

func newStore(t *testing.T, db string, cfg mongokv.Config) *mongokv.Store {
	t.Helper()
	c, err := mongokv.NewClient(mongokv.ClientConfig{URI: srv.URI(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	cfg.Database = db
	s, err := c.Store(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func listAll(t *testing.T, s kv.Store, prefix string) []string {
	t.Helper()
	var keys []string
	opts := kv.ListOptions{Prefix: prefix, Limit: 2}
	for {
		res, err := s.List(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, res.Keys...)
		if res.Done {
			return keys
		}
		opts.Cursor = res.Cursor
	}
}

func digest(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// TestBotReadsWhatGoWrote: every value the Go backend stores inline, up to
// the document limit, reads back in the bot's get as the same string; a key
// deleted or expired is null to the bot; listings agree key for key. The
// documented exceptions hold as documented: bytes that are not UTF-8 are an
// object to the bot, a value too large for one document is undefined.
func TestBotReadsWhatGoWrote(t *testing.T) {
	ctx := t.Context()
	db := srv.Database(t)
	now := time.Now().UTC().Truncate(time.Second)
	s := newStore(t, db, mongokv.Config{})
	// Just over the 8 MiB at which values used to be chunked: inline now,
	// as the bot itself stores it.
	overEight := bytes.Repeat([]byte("0123456789abcdef"), (8<<20+1<<10)/16)
	values := map[string][]byte{
		"wordle:games:42": []byte(`{"word":"apple","guesses":["crane"],"n":null}`),
		"wordle:plain":    []byte("hello"),
		"wordle:unicode":  []byte("日本語 😀 café"),
		"wordle:empty":    {},
		"wordle:md":       []byte("with metadata"),
		"wordle:8mib":     overEight,
		"loldle-emoji:x":  []byte("e"),
	}
	for k, v := range values {
		e := kv.Entry{Key: k, Value: v}
		if k == "wordle:games:42" {
			e.Expiration = now.Add(time.Hour)
		}
		if k == "wordle:md" {
			e.Metadata = json.RawMessage(`{"author":"wrangler"}`)
		}
		if err := s.PutEntry(ctx, e); err != nil {
			t.Fatalf("PutEntry(%s): %v", k, err)
		}
	}
	mustPut := func(s *mongokv.Store, key string, v []byte, opts kv.PutOptions) {
		t.Helper()
		if err := s.Put(ctx, key, v, opts); err != nil {
			t.Fatalf("Put(%s): %v", key, err)
		}
	}
	mustPut(s, "wordle:bin", []byte{0xff, 0x00, 0xfe}, kv.PutOptions{})
	mustPut(s, "wordle:gone", []byte("x"), kv.PutOptions{})
	if err := s.Delete(ctx, "wordle:gone"); err != nil {
		t.Fatal(err)
	}
	// Written two hours ago with a one-hour TTL: expired, not yet swept.
	past := newStore(t, db, mongokv.Config{Clock: clock.NewFake(now.Add(-2 * time.Hour))})
	mustPut(past, "wordle:old", []byte("stale"), kv.PutOptions{TTL: time.Hour})
	// Too large for a document of a server with a 4 KiB limit: chunked.
	small := newStore(t, db, mongokv.Config{MaxDocumentSize: mongokv.MinDocumentSize})
	mustPut(small, "wordle:chunked", bytes.Repeat([]byte("c"), mongokv.MinDocumentSize), kv.PutOptions{})

	keys := []string{"wordle:games:42", "wordle:plain", "wordle:unicode", "wordle:empty", "wordle:md", "wordle:8mib", "loldle-emoji:x", "wordle:bin", "wordle:gone", "wordle:old", "wordle:chunked", "wordle:never"}
	var ops []op
	for _, k := range keys {
		ops = append(ops, op{Op: "get", Collection: collection(k), Key: k})
	}
	ops = append(ops,
		op{Op: "getJSON", Collection: "wordle", Key: "wordle:games:42"},
		op{Op: "listAll", Collection: "wordle", Prefix: "wordle:", Limit: 2},
		op{Op: "listAll", Collection: "wordle", Prefix: "wordle:g", Limit: 1000},
	)
	out := node(t, db, ops)

	for i, k := range keys {
		got := decode[read](t, out[i])
		want, inline := values[k]
		switch {
		case inline:
			if got.Type != "string" || got.Length != len(want) || got.SHA256 != digest(want) {
				t.Errorf("bot's get(%s) = %s of %d bytes, want the string of %d bytes Go wrote", k, got.Type, got.Length, len(want))
			}
			if len(want) <= 4096 && got.Value != string(want) {
				t.Errorf("bot's get(%s) = %q, want %q", k, got.Value, want)
			}
		case k == "wordle:bin":
			if got.Type != "object" {
				t.Errorf("bot's get of a value that is not UTF-8 = %s, want an object (BSON Binary), as documented", got.Type)
			}
		case k == "wordle:chunked":
			if got.Type != "undefined" {
				t.Errorf("bot's get of a chunked value = %s, want undefined, as documented", got.Type)
			}
		default: // deleted, expired, never written
			if got.Type != "null" {
				t.Errorf("bot's get(%s) = %s, want null", k, got.Type)
			}
		}
	}
	if got := decode[struct{ JSON map[string]any }](t, out[len(keys)]).JSON; got["word"] != "apple" {
		t.Errorf("bot's getJSON = %v", got)
	}
	goKeys := listAll(t, s, "wordle:")
	if want := []string{"wordle:8mib", "wordle:bin", "wordle:chunked", "wordle:empty", "wordle:games:42", "wordle:md", "wordle:plain", "wordle:unicode"}; !slices.Equal(goKeys, want) {
		t.Fatalf("Go's listing = %q, want %q", goKeys, want)
	}
	list := decode[struct {
		Keys  []string
		Pages int
	}](t, out[len(keys)+1])
	if !slices.Equal(list.Keys, goKeys) || list.Pages != 4 {
		t.Errorf("bot's listing in pages of 2 = %q in %d pages, want Go's %q in 4", list.Keys, list.Pages, goKeys)
	}
	if g := decode[struct{ Keys []string }](t, out[len(keys)+2]).Keys; !slices.Equal(g, []string{"wordle:games:42"}) {
		t.Errorf("bot's listing of wordle:g = %q", g)
	}
}

// TestGoReadsWhatTheBotWrote: the bot's put, putJSON (with and without a
// TTL) and delete, in its own collections, read back through mongokv; the
// bot's overwrite of a key the Go backend chunked wins, and the sweep then
// deletes the chunks that no document references.
func TestGoReadsWhatTheBotWrote(t *testing.T) {
	ctx := t.Context()
	db := srv.Database(t)
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	s := newStore(t, db, mongokv.Config{Clock: clk, MaxDocumentSize: mongokv.MinDocumentSize})
	for _, k := range []string{"wordle:chunked", "wordle:deleted"} {
		if err := s.Put(ctx, k, bytes.Repeat([]byte("c"), 2*mongokv.MinDocumentSize), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := time.Now()
	out := node(t, db, []op{
		{Op: "put", Collection: "wordle", Key: "wordle:js", Value: "from the bot"},
		{Op: "put", Collection: "wordle", Key: "wordle:ttl", Value: "t", TTL: 3600},
		{Op: "putJSON", Collection: "wordle", Key: "wordle:json", JSON: map[string]any{"a": []int{1, 2}, "n": nil, "s": "é"}},
		{Op: "put", Collection: "loldle_emoji", Key: "loldle-emoji:js", Value: "l"},
		{Op: "put", Collection: "wordle", Key: "wordle:chunked", Value: "the bot's overwrite"},
		{Op: "delete", Collection: "wordle", Key: "wordle:deleted"},
		{Op: "listAll", Collection: "wordle", Prefix: "wordle:", Limit: 1000},
	})
	after := time.Now()

	for k, want := range map[string]string{"wordle:js": "from the bot", "wordle:ttl": "t", "loldle-emoji:js": "l", "wordle:chunked": "the bot's overwrite"} {
		if v, err := s.Get(ctx, k); err != nil || string(v) != want {
			t.Errorf("Get(%s) = %q, %v; want the bot's %q", k, v, err, want)
		}
	}
	e, err := s.GetEntry(ctx, "wordle:ttl")
	if err != nil || e.Expiration.Before(before.Add(time.Hour-time.Second)) || e.Expiration.After(after.Add(time.Hour+time.Second)) {
		t.Errorf("GetEntry(wordle:ttl) expiration = %v, %v; want an hour after the bot's put", e.Expiration, err)
	}
	var got map[string]any
	if found, err := kv.GetJSON(ctx, s, "wordle:json", &got); err != nil || !found || !reflect.DeepEqual(got, map[string]any{"a": []any{1.0, 2.0}, "n": nil, "s": "é"}) {
		t.Errorf("GetJSON(wordle:json) = %v, %v, %v", got, found, err)
	}
	if _, err := s.Get(ctx, "wordle:deleted"); err != kv.ErrNotFound {
		t.Errorf("Get of the key the bot deleted = %v, want kv.ErrNotFound", err)
	}
	bot := decode[struct{ Keys []string }](t, out[6]).Keys
	if goKeys := listAll(t, s, "wordle:"); !slices.Equal(goKeys, bot) {
		t.Errorf("Go's listing %q, the bot's %q", goKeys, bot)
	}

	// The bot knew nothing of the chunks of the two keys it overwrote and
	// deleted: once they are old enough, the sweep deletes them.
	clk.Advance(61 * time.Minute)
	if _, err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	admin, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{mongokv.ChunkCollection, mongokv.GenerationCollection} {
		if n, err := admin.Database(db).Collection(c).CountDocuments(ctx, map[string]any{}); err != nil || n != 0 {
			t.Errorf("%d documents left in %s after the sweep (%v), want 0", n, c, err)
		}
	}
	if v, err := s.Get(ctx, "wordle:chunked"); err != nil || string(v) != "the bot's overwrite" {
		t.Errorf("Get after the sweep = %q, %v", v, err)
	}
}

// collection is the bot's collection of a key: its module, "-" turned "_".
func collection(key string) string {
	if key == "loldle-emoji:x" {
		return "loldle_emoji"
	}
	return "wordle"
}
