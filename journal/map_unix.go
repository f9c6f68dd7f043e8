//go:build unix

package journal

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// mapFile maps f's first size bytes shared: a store into them is the
// file's, in the kernel's page cache, whatever becomes of the process.
func mapFile(f *os.File, size int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
}

func unmapFile(mem []byte) error { return syscall.Munmap(mem) }

// logLocks: the mark log's lock keeps the journal (see Open).
const logLocks = true

// lockFile takes f's exclusive lock, waiting up to wait for another
// journal to release it, as bbolt waits for its file's lock.
func lockFile(f *os.File, wait time.Duration) error {
	for end := time.Now().Add(wait); ; time.Sleep(50 * time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if !time.Now().Before(end) {
			return ErrLocked
		}
	}
}

// writeThrough has nothing to do: the mapping is the file.
func (l *markLog) writeThrough(int, int) {}
