package botkv_test

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/botkv"
	"github.com/kvshadow/kvshadow/botkv/botkvtest"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/tests/mongotest"
)

// Open reads Workers KV at start, as kvshadow-proxy does: a wrong token,
// account or namespace fails it with a *VarError naming the variable (each
// in the message Workers KV gave), and leaves nothing on the board.
func TestOpenNamesEachWrongWorkersKVSetting(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for name, value := range map[string]string{
		"CLOUDFLARE_API_TOKEN":       "not-the-token",
		"CLOUDFLARE_ACCOUNT_ID":      "00000000000000000000000000000000",
		"CLOUDFLARE_KV_NAMESPACE_ID": "00000000000000000000000000000000",
	} {
		st, err := r.open(t, map[string]string{name: value})
		if err == nil {
			_ = st.Close(context.Background())
		}
		var ve *botkv.VarError
		if !errors.As(err, &ve) || ve.Name != name || !errors.Is(err, botkv.ErrConfig) || !strings.Contains(err.Error(), "refused") {
			t.Errorf("Open with a wrong %s: %v; want a *VarError naming it", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
		if strings.Contains(err.Error(), "not-the-token") {
			t.Errorf("the error quotes the token: %v", err)
		}
	}
	if beats, err := r.board(t).Instances(t.Context()); err != nil || len(beats) != 0 {
		t.Errorf("a refused Open left %+v on the board (%v)", beats, err)
	}
}

// In off (KVSHADOW_STAGE unset, no stage document) nothing is copied to
// MongoDB: WaitSettled says so rather than succeed.
func TestWaitSettledInOffSaysNothingIsShadowed(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	st, err := r.open(t, map[string]string{"KVSHADOW_STAGE": ""})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	if err := st.KV.Put(t.Context(), "wordle:k", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.WaitSettled(t.Context()); !errors.Is(err, botkv.ErrNotShadowed) || !strings.Contains(err.Error(), "KVSHADOW_STAGE=dualwrite") {
		t.Errorf("WaitSettled in %s: %v; want botkv.ErrNotShadowed, saying what to set", st.Stage(), err)
	}
}

// docs/go-bot.md's outage test, to the letter: the environment of "In
// tests" (a fresh MONGODB_DB, KVSHADOW_STAGE=dualwrite, no consistency
// window, t.TempDir() for KVSHADOW_JOURNAL_DIR), MongoDB down at an address
// where nothing listens with the guide's half-second server selection, and
// botkvtest.KeepStage before Open. The store serves Workers KV, keeps the
// copies' keys dirty, and Close keeps them in the journal: a store opened
// again on the directory knows every one.
func TestTheGuidesOutageTest(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	env := maps.Clone(r.env)
	env["MONGODB_URI"] = "mongodb://" + downAddr(t).addr + "/?serverSelectionTimeoutMS=500"
	env["MONGODB_DB"] = mongotest.NewDatabaseName(t.Name())
	dir := t.TempDir()
	env["KVSHADOW_JOURNAL_DIR"] = dir
	botkvtest.KeepStage(t, dir, dualwrite.DualWrite)
	open := func() *botkv.Store {
		st, err := botkv.Open(t.Context(), botkv.Config{Getenv: func(k string) string { return env[k] }}, botkv.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatalf("Open with MongoDB down, as docs/go-bot.md says: %v", err)
		}
		return st
	}
	st := open()
	kvs, err := st.Adapter(ErrNotFound)
	if err != nil {
		t.Fatal(err)
	}
	bot := Prefixed(kvs, "wordle")
	for _, k := range []string{"a", "b", "c"} {
		if err := bot.Put(t.Context(), k, []byte(k)); err != nil {
			t.Fatalf("Put with MongoDB down: %v", err)
		}
	}
	if keys, err := bot.List(t.Context(), ""); err != nil || !slices.Equal(keys, []string{"a", "b", "c"}) {
		t.Errorf("List with MongoDB down: %v %v", keys, err)
	}
	if !st.Detached() || st.Stage() != dualwrite.DualWrite {
		t.Errorf("stage %s, detached %v; want dualwrite, detached", st.Stage(), st.Detached())
	}
	if err := st.Close(context.Background()); err != nil {
		t.Logf("Close: %v", err)
	}
	again := open()
	defer again.Close(context.Background())
	if st := again.Dual.Stats(); st.Dirty+st.Unsettled != 3 {
		t.Errorf("after Close and Open on the journal: %d dirty, %d unsettled; want the 3 keys written", st.Dirty, st.Unsettled)
	}
}
