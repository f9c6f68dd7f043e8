package syncbuf_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/kvshadow/kvshadow/internal/syncbuf"
)

// Run under -race: concurrent writes and reads, nothing lost.
func TestConcurrentWriters(t *testing.T) {
	var b syncbuf.Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 800) {
		t.Fatalf("%d bytes, want 800", len(got))
	}
}
