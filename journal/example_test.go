package journal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/journal"
	"github.com/kvshadow/kvshadow/kv"
)

// A dual-write store keeps its settle set in a journal: what Close leaves
// there, the next New on the same file loads and verifies.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "journal-example")
	defer os.RemoveAll(dir)
	j, err := journal.Open(filepath.Join(dir, "settle.db"), journal.Options{})
	if err != nil {
		panic(err)
	}
	defer j.Close() // after the store's Close, which makes the last commit

	primary, shadow := memory.New(memory.Config{}), memory.New(memory.Config{})
	store, err := dualwrite.New(dualwrite.Config{Primary: primary, Shadow: shadow, Stage: dualwrite.DualWrite, Journal: j})
	if err != nil {
		panic(err)
	}
	_ = store.Put(ctx, "wordle:games:42", []byte("3"), kv.PutOptions{})
	_ = store.Close(ctx) // the key is not verified yet: it stays in the journal

	n, _ := j.Len()
	fmt.Println("unsettled keys kept:", n)

	restarted, err := dualwrite.New(dualwrite.Config{Primary: primary, Shadow: shadow, Stage: dualwrite.DualWrite, Journal: j})
	if err != nil {
		panic(err)
	}
	fmt.Println("loaded:", restarted.Stats().Loaded)
	_ = restarted.Close(ctx)
	// Output:
	// unsettled keys kept: 1
	// loaded: 1
}
