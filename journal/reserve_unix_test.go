//go:build unix

package journal_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/kvshadow/kvshadow/journal"
)

// A new mark log is on disk whole, not sparse: a store into a page the
// disk cannot hold would kill the process (SIGBUS) instead of failing Open.
func TestANewMarkLogIsReservedWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settle.db")
	j := open(t, path)
	defer j.Close()
	fi, err := os.Stat(path + ".marks")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != journal.DefaultLogSize || fi.Sys().(*syscall.Stat_t).Blocks*512 < journal.DefaultLogSize {
		t.Fatalf("the mark log: %d bytes, %d on disk", fi.Size(), fi.Sys().(*syscall.Stat_t).Blocks*512)
	}
}
