//go:build !linux

package journal

import (
	"os"
	"syscall"
)

func fallocate(*os.File, int) error { return syscall.EOPNOTSUPP }
