package dualwrite_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/journal"
	"github.com/kvshadow/kvshadow/kv"
)

// A key reloaded from the journal holds the flip until it is verified (its
// last writer is unknown), and the fence says so: not that a binding copy
// wrote it, when no tee sent one.
func TestKeysReloadedFromTheJournalAreNotCalledBindingCopies(t *testing.T) {
	j, err := journal.Open(filepath.Join(t.TempDir(), "settle.db"), journal.Options{})
	must(t, err)
	t.Cleanup(func() { j.Close() })
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Shadow, Journal: j})
	ctx := context.Background()
	for i := range 3 {
		must(t, p.store.Put(ctx, key(i), []byte("v"), kv.PutOptions{}))
	}
	p.flush()
	must(t, p.store.Close(ctx))
	p.open(dualwrite.Config{Stage: dualwrite.Handover, Journal: j})
	f := p.store.Fence()
	held := strings.Join(f.HeldBy, "; ")
	if f.IngestUnverified != 3 || !strings.Contains(held, "3 keys reloaded from the journal (their last writer unknown) are not verified") || strings.Contains(held, "binding copy") {
		t.Fatalf("the fence after a restart with no tee: %+v", f)
	}
}
