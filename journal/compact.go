package journal

import (
	"errors"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// compactSuffix names the copy a compaction writes before it replaces the
// file.
const compactSuffix = ".compact"

// CompactFloor is the free space below which a journal is never compacted:
// rewriting a small file saves less than it costs.
const CompactFloor = 1 << 20

// needsCompaction reports whether a file of size bytes, free of them on
// bbolt's free list, is worth rewriting (see Scale in the package doc).
func needsCompaction(size, free int64) bool {
	return free >= CompactFloor && 2*free >= size
}

// compact rewrites the file with its live keys only, as etcd's defrag
// does: a copy beside it, synced, renamed over it, then reopened. A crash
// before the rename leaves the old file whole (Open removes the copy); one
// after leaves the new one whole. Holding mu, it keeps every reader out.
func (j *Journal) compact() error {
	tmp := j.path + compactSuffix
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{NoSync: true, NoFreelistSync: true})
	if err != nil {
		return err
	}
	// In one transaction, each bucket's keys in order with full pages:
	// nothing is inserted between them until the next write of the set.
	err = bolt.Compact(dst, j.db, 0)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = j.db.Close()
		j.db = nil
	}
	if err == nil {
		err = os.Rename(tmp, j.path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		if j.db == nil {
			err = errors.Join(err, j.reopen())
		}
		return err
	}
	if err := syncDir(filepath.Dir(j.path)); err != nil {
		return errors.Join(err, j.reopen())
	}
	return j.reopen()
}

// reopen opens the file again after a compaction (or a first commit's
// creates it), waiting at least DefaultLockTimeout for its lock.
func (j *Journal) reopen() error { return j.openDB(max(j.opts.Timeout, DefaultLockTimeout)) }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
