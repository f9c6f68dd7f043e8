package journal

import (
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// The errors of Open and Load.
var (
	// ErrLocked: another process (or another Journal) holds the file.
	ErrLocked = errors.New("journal: the file is in use by another journal")
	// ErrCorrupt: the file is not a journal of this format.
	ErrCorrupt = errors.New("journal: the file is not a settle journal of this format")
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
}

// Journal is a dualwrite.Journal in one bbolt file. It is safe for
// concurrent use.
type Journal struct {
	db *bolt.DB
}

var _ dualwrite.Journal = (*Journal)(nil)

var (
	bucketMarks    = []byte("marks")
	bucketSettings = []byte("settings")
	keyVersion     = []byte("version")
	keyReconcile   = []byte("reconcile")
	version        = []byte{1}
)

// Open opens the journal at path, creating it (mode 0600: the keys are user
// data) if it does not exist.
func Open(path string, opts Options) (*Journal, error) {
	timeout := opts.LockTimeout
	switch {
	case timeout == 0:
		timeout = DefaultLockTimeout
	case timeout < 0:
		timeout = time.Nanosecond
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, NoSync: opts.NoSync, NoFreelistSync: true})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("%w: %s", ErrLocked, path)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrChecksum):
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	case err != nil:
		return nil, fmt.Errorf("journal: opening %s: %w", path, err)
	}
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
		return nil, fmt.Errorf("journal: %s: %w", path, err)
	}
	return &Journal{db: db}, nil
}

// Load implements dualwrite.Journal.
func (j *Journal) Load(ctx context.Context) (map[string]dualwrite.Mark, bool, error) {
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

// Commit implements dualwrite.Journal: one bbolt transaction.
func (j *Journal) Commit(ctx context.Context, changes map[string]dualwrite.Mark, reconcile bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := j.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketMarks)
		for k, m := range changes {
			var err error
			if m == dualwrite.MarkSettled {
				err = b.Delete([]byte(k))
			} else {
				err = b.Put([]byte(k), []byte{byte(m)})
			}
			if err != nil {
				return err
			}
		}
		flag := []byte("0")
		if reconcile {
			flag = []byte("1")
		}
		return tx.Bucket(bucketSettings).Put(keyReconcile, flag)
	})
	if err != nil {
		return fmt.Errorf("journal: commit: %w", err)
	}
	return nil
}

// Len returns the number of keys in the journal.
func (j *Journal) Len() (int, error) {
	var n int
	err := j.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketMarks).Stats().KeyN
		return nil
	})
	return n, err
}

// Path returns the file's path.
func (j *Journal) Path() string { return j.db.Path() }

// Close releases the file. Close the dualwrite.Store first: its Close
// makes the last commit.
func (j *Journal) Close() error { return j.db.Close() }
