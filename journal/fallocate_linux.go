package journal

import (
	"os"
	"syscall"
)

func fallocate(f *os.File, size int) error { return syscall.Fallocate(int(f.Fd()), 0, 0, int64(size)) }
