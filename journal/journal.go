package journal

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// The errors of the journal.
var (
	// ErrLocked: another process (or another Journal) holds the file.
	ErrLocked = errors.New("journal: the file is in use by another journal")
	// ErrCorrupt: the file is not a journal of this format.
	ErrCorrupt = errors.New("journal: the file is not a settle journal of this format")
	// ErrNotOpen: a compaction could not reopen the file (Load, Len); the
	// next Commit tries again.
	ErrNotOpen = errors.New("journal: the file is not open after a failed compaction; the next commit reopens it")
	// ErrClosed: the journal was closed.
	ErrClosed = errors.New("journal: closed")
)

// DefaultLockTimeout is how long Open waits for the file lock.
const DefaultLockTimeout = time.Second

// Options tune a Journal. The zero value syncs every commit and waits
// DefaultLockTimeout for the file.
type Options struct {
	// NoSync skips fsync at each commit: a commit then survives the
	// process's death (SIGKILL, panic) but not a crash of the machine.
	NoSync bool
	// LockTimeout is how long Open waits for another holder to release the
	// file; zero means DefaultLockTimeout, negative fails at once.
	LockTimeout time.Duration
	// LogSize is the size in bytes of the mark log (the file beside the
	// journal, named as it with ".marks" added) when Open creates it; an
	// existing log keeps its size. Zero means DefaultLogSize.
	LogSize int
}

// initialMmapSize is the address space bbolt maps at once (not memory,
// not disk); why is in the package doc's Scale.
const initialMmapSize = 1 << 30 * (math.MaxUint >> 63)

// allocSize is the least step the file grows by; a commit of many keys
// grows it by growthPerKey a key at once. bbolt's default grows a file
// mapped as widely as initialMmapSize by 16 MiB at a time, which a journal
// of a thousand keys would then take.
const (
	allocSize    = 1 << 20
	growthPerKey = 64
)

// Journal is a dualwrite.Journal in one bbolt file. It is safe for
// concurrent use.
type Journal struct {
	path string
	opts *bolt.Options
	// mu guards db, which compaction replaces: Commit holds it
	// exclusively, the readers shared.
	mu     sync.RWMutex
	db     *bolt.DB
	log    *markLog
	closed bool
	// recovered counts the marks Open found in the mark log only.
	recovered int
	// fresh: no bbolt file yet (see Open), until the first commit.
	fresh bool
}

var (
	_ dualwrite.Journal  = (*Journal)(nil)
	_ dualwrite.Recorder = (*Journal)(nil)
)

var (
	bucketMarks    = []byte("marks")
	bucketSettings = []byte("settings")
	keyVersion     = []byte("version")
	keyReconcile   = []byte("reconcile")
	version        = []byte{1}
)

// Open opens the journal at path, creating it (mode 0600: the keys are user
// data) if it does not exist. Where the mark log's lock keeps the journal
// (unix), a new journal's file is made by the first commit with marks to
// keep: one never written to costs no fsync.
func Open(path string, opts Options) (*Journal, error) {
	timeout := opts.LockTimeout
	switch {
	case timeout == 0:
		timeout = DefaultLockTimeout
	case timeout < 0:
		timeout = time.Nanosecond
	}
	size := cmp.Or(opts.LogSize, DefaultLogSize)
	if size < minLogSize {
		return nil, fmt.Errorf("journal: LogSize %d is under %d bytes", size, minLogSize)
	}
	// A compaction that a crash cut short leaves its copy, never the file.
	if err := os.Remove(path + compactSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("journal: %w", err)
	}
	j := &Journal{path: path, opts: &bolt.Options{Timeout: timeout, NoSync: opts.NoSync, NoFreelistSync: true, InitialMmapSize: initialMmapSize}}
	_, err := os.Stat(path)
	wait := timeout // without the bbolt file, the mark log's lock is the journal's
	if j.fresh = logLocks && errors.Is(err, os.ErrNotExist); !j.fresh {
		if err := j.openDB(timeout); err != nil {
			return nil, err
		}
		wait = 0 // the bbolt file's lock made any other journal wait
	}
	if j.log, err = openLog(path+logSuffix, size, wait); err != nil {
		return nil, errors.Join(fmt.Errorf("journal: the mark log of %s: %w", path, err), j.closeDB())
	}
	if err := j.recover(); err != nil {
		return nil, errors.Join(fmt.Errorf("journal: %s: recovering the mark log: %w", path, err), j.Close())
	}
	return j, nil
}

// openDB opens (or makes) the bbolt file, waiting up to timeout for its
// lock, and checks its version.
func (j *Journal) openDB(timeout time.Duration) error {
	o := *j.opts
	o.Timeout = timeout
	db, err := bolt.Open(j.path, 0o600, &o)
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("%w: %s", ErrLocked, j.path)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrChecksum):
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, j.path, err)
	case err != nil:
		return fmt.Errorf("journal: opening %s: %w", j.path, err)
	}
	db.AllocSize = allocSize
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketMarks); err != nil {
			return err
		}
		st, err := tx.CreateBucketIfNotExists(bucketSettings)
		if err != nil {
			return err
		}
		switch v := st.Get(keyVersion); {
		case v == nil:
			return st.Put(keyVersion, version)
		case string(v) != string(version):
			return fmt.Errorf("%w: version %v", ErrCorrupt, v)
		}
		return nil
	})
	if err != nil {
		db.Close()
		return fmt.Errorf("journal: %s: %w", j.path, err)
	}
	j.db, j.fresh = db, false
	return nil
}

// recover commits what the mark log holds (the marks made since the last
// commit before the process ended) into the file, then empties the log.
func (j *Journal) recover() error {
	logged := j.log.replay()
	if len(logged) > 0 && j.db == nil {
		if err := j.openDB(j.opts.Timeout); err != nil {
			return err
		}
	}
	if len(logged) > 0 {
		keys := slices.Sorted(maps.Keys(logged))
		err := j.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketMarks)
			b.FillPercent = fillPercent
			for _, k := range keys {
				if v := b.Get([]byte(k)); len(v) == 1 && dualwrite.Mark(v[0]) >= logged[k] {
					continue
				}
				j.recovered++
				if err := b.Put([]byte(k), []byte{byte(logged[k])}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	j.log.reset()
	return nil
}

// Recovered returns how many marks Open found in the mark log and not in
// the file: what the process's death did not lose, and a crash of the
// machine at that moment would have.
func (j *Journal) Recovered() int { return j.recovered }

// Record implements dualwrite.Recorder: it appends the mark to the mark
// log; false when the log's active half is full (a commit has not dropped
// the other half yet).
func (j *Journal) Record(key string, m dualwrite.Mark) bool { return j.log.record(key, m) }

// Seal implements dualwrite.Recorder.
func (j *Journal) Seal() { j.log.seal() }

// Load implements dualwrite.Journal.
func (j *Journal) Load(ctx context.Context) (map[string]dualwrite.Mark, bool, error) {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed {
		return nil, false, ErrClosed
	}
	if j.db == nil {
		return nil, false, j.notOpen()
	}
	marks := make(map[string]dualwrite.Mark)
	var reconcile bool
	err := j.db.View(func(tx *bolt.Tx) error {
		reconcile = string(tx.Bucket(bucketSettings).Get(keyReconcile)) == "1"
		return tx.Bucket(bucketMarks).ForEach(func(k, v []byte) error {
			if len(v) != 1 || (dualwrite.Mark(v[0]) != dualwrite.MarkDirty && dualwrite.Mark(v[0]) != dualwrite.MarkUnsettled) {
				return fmt.Errorf("%w: a key has mark %v", ErrCorrupt, v)
			}
			marks[string(k)] = dualwrite.Mark(v[0])
			return ctx.Err()
		})
	})
	if err != nil {
		return nil, false, fmt.Errorf("journal: load: %w", err)
	}
	return marks, reconcile, nil
}

// Commit implements dualwrite.Journal: one bbolt transaction, its keys
// written in key order (see Scale in the package doc). When the commit
// leaves most of the file free, the file is compacted before Commit returns.
func (j *Journal) Commit(ctx context.Context, changes map[string]dualwrite.Mark, reconcile bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrClosed
	}
	if j.db == nil {
		if err := j.reopen(); err != nil {
			return fmt.Errorf("journal: commit: %w", err)
		}
	}
	keys := slices.Sorted(maps.Keys(changes))
	// One step of growth for the whole commit: each step is a truncate and
	// an fsync.
	j.db.AllocSize = max(allocSize, len(keys)*growthPerKey)
	var size int64
	err := j.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketMarks)
		// bbolt's default of half would double the file.
		b.FillPercent = fillPercent
		if err := putMarks(b, keys, changes); err != nil {
			return err
		}
		flag := []byte("0")
		if reconcile {
			flag = []byte("1")
		}
		size = tx.Size()
		return tx.Bucket(bucketSettings).Put(keyReconcile, flag)
	})
	if err != nil {
		return fmt.Errorf("journal: commit: %w", err)
	}
	j.log.committed()
	if free := int64(j.db.Stats().FreeAlloc); needsCompaction(size, free) {
		if err := j.compact(); err != nil {
			return fmt.Errorf("journal: compaction (the commit itself is durable): %w", err)
		}
	}
	return nil
}

// fillPercent is how full a split leaves a page of marks.
const fillPercent = 0.9

func putMarks(b *bolt.Bucket, keys []string, changes map[string]dualwrite.Mark) error {
	for _, k := range keys {
		var err error
		if m := changes[k]; m == dualwrite.MarkSettled {
			err = b.Delete([]byte(k))
		} else {
			err = b.Put([]byte(k), []byte{byte(m)})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Len returns the number of keys in the journal.
func (j *Journal) Len() (int, error) {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed {
		return 0, ErrClosed
	}
	if j.db == nil {
		return 0, j.notOpen()
	}
	var n int
	err := j.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketMarks).Stats().KeyN
		return nil
	})
	return n, err
}

// Size returns the file's size in bytes.
func (j *Journal) Size() (int64, error) {
	fi, err := os.Stat(j.path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Path returns the file's path.
func (j *Journal) Path() string { return j.path }

// Close releases the file. Close the dualwrite.Store first: its Close
// makes the last commit.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	return errors.Join(j.log.close(), j.closeDB())
}

func (j *Journal) closeDB() error {
	if j.db == nil {
		return nil
	}
	err := j.db.Close()
	j.db = nil
	return err
}

// notOpen is Load's and Len's error without the bbolt file: none while
// fresh (nothing committed, nothing to load).
func (j *Journal) notOpen() error {
	if j.fresh {
		return nil
	}
	return ErrNotOpen
}
