package botkv_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/tests/proxytest"
)

// TestOpenRefusesABoardOfAnotherPairing: the stage document in the bot's
// MONGODB_DB governs the namespace with another database (live): Open
// fails with an error matching control.ErrConfig that names both
// pairings, and builds no store (Workers KV untouched, no stage key
// written). A first start past shadow on a board with no document fails
// alike, and so does one in live with MongoDB empty while Workers KV holds
// keys.
func TestOpenRefusesABoardOfAnotherPairing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := t.Context()
	if err := r.primary.Store.Put(ctx, "wordle:k", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	count := func() int { return r.primary.Store.Len() }
	t.Run("no stage document, KVSHADOW_STAGE live", func(t *testing.T) {
		st, err := r.open(t, map[string]string{"KVSHADOW_STAGE": "live"})
		if err == nil {
			_ = st.Close(ctx)
			t.Fatal("Open started in live on a board with no stage document")
		}
		if !errors.Is(err, control.ErrConfig) || !strings.Contains(err.Error(), "holds no stage document") || !strings.Contains(err.Error(), "(MongoDB database "+r.db+")") {
			t.Errorf("Open: %v", err)
		}
		if count() != 1 {
			t.Errorf("Workers KV holds %d keys, want 1", count())
		}
	})
	other := control.Pairing{Account: proxytest.Account, Namespaces: []control.Namespace{{ID: proxytest.Namespace, Database: "miti99bot"}}}
	if err := r.board(t).Swap(ctx, 0, control.Document{Stage: dualwrite.Live, Generation: 1, UpdatedAt: time.Now(), UpdatedBy: "a proxy", Pairing: other}); err != nil {
		t.Fatal(err)
	}
	st, err := r.open(t, nil)
	if err == nil {
		_ = st.Close(ctx)
		t.Fatal("Open followed a stage document of another pairing")
	}
	want := "governs Workers KV account " + proxytest.Account + ", namespace " + proxytest.Namespace + " (MongoDB database miti99bot), and this instance serves Workers KV account " +
		proxytest.Account + ", namespace " + proxytest.Namespace + " (MongoDB database " + r.db + ")"
	if !errors.Is(err, control.ErrConfig) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), proxytest.PrimaryToken) {
		t.Errorf("Open: %v\nwant an error matching control.ErrConfig saying %q", err, want)
	}
	if count() != 1 {
		t.Errorf("Workers KV holds %d keys after the refused Open, want 1 (no stage key written)", count())
	}

	// The document re-paired to this database, still empty of the bot's keys.
	doc, err := r.board(t).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := doc
	next.Generation, next.Pairing.Namespaces = 2, []control.Namespace{{ID: proxytest.Namespace, Database: r.db}}
	if err := r.board(t).Swap(ctx, 1, next); err != nil {
		t.Fatal(err)
	}
	if st, err := r.open(t, nil); err == nil || !errors.Is(err, control.ErrConfig) || !strings.Contains(err.Error(), "MongoDB, authoritative in live, holds no key while Workers KV holds some") {
		if err == nil {
			_ = st.Close(ctx)
		}
		t.Errorf("Open in live over an empty MongoDB: %v", err)
	}
	if count() != 1 {
		t.Errorf("Workers KV holds %d keys, want 1", count())
	}
}
