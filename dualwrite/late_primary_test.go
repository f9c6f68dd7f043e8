package dualwrite_test

import (
	"context"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// A copy delayed past the fence, of a key the Store holds no write of: the
// order cannot be told by time, but Workers KV, authoritative until the
// flip, can: when it holds what the copy says, the copy is the last write
// it acknowledged, and MongoDB takes it; when it holds anything else, the
// copy stays a conflict and MongoDB keeps its value.
func TestLateCopyThatWorkersKVStillHolds(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Live})
	ctx := context.Background()
	p.clk.Advance(2 * window)
	acked := p.clk.Now().Add(-2 * time.Minute) // past every ordering by time
	put := func(s kv.Store, key, value string) {
		t.Helper()
		must(t, s.Put(ctx, key, []byte(value), kv.PutOptions{}))
	}
	// The binding wrote f (and deleted g) before the flip; their copies
	// never came until now. MongoDB holds what it had before.
	put(p.primary.Store, "wordle:f", "binding")
	put(p.shadow.Store, "wordle:f", "older")
	put(p.shadow.Store, "wordle:g", "older")
	// h: Workers KV holds another value than the copy's.
	put(p.primary.Store, "wordle:h", "newer in Workers KV")
	put(p.shadow.Store, "wordle:h", "older")
	must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{
		{Key: "wordle:f", Value: []byte("binding"), At: acked},
		{Key: "wordle:g", Delete: true, At: acked},
		{Key: "wordle:h", Value: []byte("binding"), At: acked},
	}))
	p.flush()
	if s, pr := valueOf(t, p.shadow, "wordle:f"), valueOf(t, p.primary, "wordle:f"); s != "binding" || pr != "binding" {
		t.Fatalf("a late copy Workers KV holds: shadow %q, primary %q", s, pr)
	}
	if s := valueOf(t, p.shadow, "wordle:g"); s != "<none>" {
		t.Fatalf("a late delete Workers KV shows: shadow %q", s)
	}
	if s := valueOf(t, p.shadow, "wordle:h"); s != "older" {
		t.Fatalf("a late copy Workers KV does not hold overwrote MongoDB: %q", s)
	}
	st := p.store.Stats()
	if st.LateCopies[dualwrite.LateApplied] != 2 || st.LateCopies[dualwrite.LateConflict] != 1 {
		t.Fatalf("late copies %v", st.LateCopies)
	}
}
