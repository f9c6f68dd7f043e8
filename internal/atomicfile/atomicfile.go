// Package atomicfile replaces a file so that a crash, or a reader at any
// moment, finds the old file or the whole new one, never a torn one.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data, made with perm: a synced temporary file
// beside it, renamed over it, then the folder synced where the platform
// allows, so that the rename is durable.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
