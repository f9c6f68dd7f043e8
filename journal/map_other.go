//go:build !unix

package journal

import (
	"io"
	"os"
	"time"
)

// mapFile reads f's first size bytes: without a shared mapping, each
// change is written through with writeThrough, a write into the page
// cache that survives the process as the mapping's stores do.
func mapFile(f *os.File, size int) ([]byte, error) {
	mem := make([]byte, size)
	if _, err := f.ReadAt(mem, 0); err != nil && err != io.EOF {
		return nil, err
	}
	return mem, nil
}

func unmapFile([]byte) error { return nil }

// writeThrough writes mem[off:end] to the file; a failure shows in the
// next replay as a record missing.
func (l *markLog) writeThrough(off, end int) { _, _ = l.f.WriteAt(l.mem[off:end], int64(off)) }

// lockFile relies on the bbolt file's lock, which bbolt takes on every
// system: a new journal makes its file at once (logLocks).
func lockFile(*os.File, time.Duration) error { return nil }

const logLocks = false
