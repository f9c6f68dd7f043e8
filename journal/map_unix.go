//go:build unix

package journal

import (
	"errors"
	"os"
	"syscall"
)

// mapFile maps f's first size bytes shared: a store into them is the
// file's, in the kernel's page cache, whatever becomes of the process.
func mapFile(f *os.File, size int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
}

func unmapFile(mem []byte) error { return syscall.Munmap(mem) }

// lockFile takes f's exclusive lock without waiting: the bbolt file's
// lock, taken first, already made any other journal wait.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}

// writeThrough has nothing to do: the mapping is the file.
func (l *markLog) writeThrough(int, int) {}
