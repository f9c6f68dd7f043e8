package journal_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/journal"
)

func open(t *testing.T, path string) *journal.Journal {
	t.Helper()
	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// Commits are kept across a reopen: keys with their marks, removals, and
// the reconciliation flag.
func TestCommitLoadReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "settle.db")
	j := open(t, path)
	must(t, j.Commit(ctx, map[string]dualwrite.Mark{
		"wordle:a": dualwrite.MarkUnsettled, "wordle:b": dualwrite.MarkDirty, "wordle:c": dualwrite.MarkUnsettled,
	}, false))
	must(t, j.Commit(ctx, map[string]dualwrite.Mark{"wordle:c": dualwrite.MarkSettled, "wordle:a": dualwrite.MarkDirty}, true))
	must(t, j.Close())

	j = open(t, path)
	defer j.Close()
	marks, reconcile, err := j.Load(ctx)
	must(t, err)
	if len(marks) != 2 || marks["wordle:a"] != dualwrite.MarkDirty || marks["wordle:b"] != dualwrite.MarkDirty || !reconcile {
		t.Fatalf("Load = %v, reconcile %v", marks, reconcile)
	}
	if n, err := j.Len(); err != nil || n != 2 {
		t.Fatalf("Len = %d, %v", n, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v, %v: the keys are user data", fi.Mode(), err)
	}
}

// One journal file has one holder at a time.
func TestLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settle.db")
	j := open(t, path)
	defer j.Close()
	_, err := journal.Open(path, journal.Options{LockTimeout: -1})
	if !errors.Is(err, journal.ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
}

// A file that is not a journal, or holds a mark this format does not know,
// is refused rather than read as an empty set.
func TestCorrupt(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.db")
	must(t, os.WriteFile(junk, []byte("not a bbolt file, not at all, but long enough to be read as a page header............"), 0o600))
	if _, err := journal.Open(junk, journal.Options{}); !errors.Is(err, journal.ErrCorrupt) {
		t.Fatalf("Open(junk) = %v, want ErrCorrupt", err)
	}

	path := filepath.Join(dir, "settle.db")
	j := open(t, path)
	must(t, j.Commit(context.Background(), map[string]dualwrite.Mark{"wordle:a": dualwrite.MarkDirty}, false))
	must(t, j.Close())
	db, err := bolt.Open(path, 0o600, nil)
	must(t, err)
	must(t, db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("marks")).Put([]byte("wordle:x"), []byte{9}) }))
	must(t, db.Close())
	j = open(t, path)
	defer j.Close()
	if _, _, err := j.Load(context.Background()); !errors.Is(err, journal.ErrCorrupt) {
		t.Fatalf("Load = %v, want ErrCorrupt", err)
	}
}

// A new journal makes its file at the first commit with marks to keep: a
// store that writes nothing costs no fsync. Until then its mark log's lock
// keeps it, and it reads as empty.
func TestANewJournalMakesItsFileAtTheFirstCommit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "settle.db")
	for range 2 {
		j := open(t, path)
		marks, _, err := j.Load(ctx)
		n, lerr := j.Len()
		if err != nil || len(marks) != 0 || lerr != nil || n != 0 {
			t.Fatalf("a new journal: Load %v %v, Len %d %v", marks, err, n, lerr)
		}
		if _, err := journal.Open(path, journal.Options{LockTimeout: -1}); !errors.Is(err, journal.ErrLocked) {
			t.Fatalf("a second Open of a new journal = %v, want ErrLocked", err)
		}
		must(t, j.Close())
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a journal with nothing committed left its file: %v", err)
		}
	}
	j := open(t, path)
	must(t, j.Commit(ctx, map[string]dualwrite.Mark{"wordle:a": dualwrite.MarkDirty}, false))
	must(t, j.Close())
	j = open(t, path)
	if marks, _, err := j.Load(ctx); err != nil || marks["wordle:a"] != dualwrite.MarkDirty {
		t.Fatalf("after the first commit: Load %v, %v", marks, err)
	}
	must(t, j.Close())
	// A mark recorded in a new journal that ends before any commit is in
	// its file once opened again.
	path = filepath.Join(t.TempDir(), "settle.db")
	j = open(t, path)
	j.Record("wordle:b", dualwrite.MarkUnsettled)
	must(t, j.Close())
	j = open(t, path)
	defer j.Close()
	if marks, _, err := j.Load(ctx); err != nil || marks["wordle:b"] != dualwrite.MarkUnsettled || j.Recovered() != 1 {
		t.Fatalf("a new journal's mark after a restart: Load %v, %v, recovered %d", marks, err, j.Recovered())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkCommit measures one group commit of n new marks: a SIGKILL loses
// at most the marks of the commit under way and those made since it began,
// about the write rate times two commit times, for keys entering the set.
func BenchmarkCommit(b *testing.B) {
	for _, sync := range []bool{true, false} {
		for _, n := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("sync=%v/marks=%d", sync, n), func(b *testing.B) {
				j, err := journal.Open(filepath.Join(b.TempDir(), "settle.db"), journal.Options{NoSync: !sync})
				if err != nil {
					b.Fatal(err)
				}
				defer j.Close()
				ctx := context.Background()
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					changes := make(map[string]dualwrite.Mark, n)
					for k := range n {
						changes[fmt.Sprintf("wordle:%d-%d", i, k)] = dualwrite.MarkUnsettled
					}
					if err := j.Commit(ctx, changes, false); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// A journal whose keys have settled gives its space back: the commit that
// leaves most of the file free rewrites it with only the live keys, and
// the journal goes on (commits, loads, its lock) on the new file.
func TestCompactsOnceSettled(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "settle.db")
	j := open(t, path)
	defer j.Close()
	const n = 50_000
	all, settled := map[string]dualwrite.Mark{}, map[string]dualwrite.Mark{}
	for i := range n {
		k := fmt.Sprintf("wordle:games:%06d", i)
		all[k], settled[k] = dualwrite.MarkUnsettled, dualwrite.MarkSettled
	}
	must(t, j.Commit(ctx, all, false))
	full, err := j.Size()
	must(t, err)
	delete(settled, "wordle:games:000007")
	must(t, j.Commit(ctx, settled, true))
	small, err := j.Size()
	must(t, err)
	if small*10 > full || small > 64<<10 {
		t.Fatalf("the file is %d bytes with %d keys and %d with one: not compacted", full, n, small)
	}
	marks, reconcile, err := j.Load(ctx)
	must(t, err)
	if len(marks) != 1 || marks["wordle:games:000007"] != dualwrite.MarkUnsettled || !reconcile {
		t.Fatalf("after compaction Load = %d keys, reconcile %v", len(marks), reconcile)
	}
	must(t, j.Commit(ctx, map[string]dualwrite.Mark{"wordle:x": dualwrite.MarkDirty}, false))
	if n, err := j.Len(); err != nil || n != 2 {
		t.Fatalf("Len = %d, %v", n, err)
	}
	if _, err := journal.Open(path, journal.Options{LockTimeout: -1}); !errors.Is(err, journal.ErrLocked) {
		t.Fatalf("a second Open after compaction = %v, want ErrLocked", err)
	}
	if _, err := os.Stat(path + ".compact"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the compaction's copy is left: %v", err)
	}
}

// BenchmarkRecord measures one process-death record, what a key entering
// the settle set costs its writer in the journal: a copy into the mapped
// mark log under its mutex. Each 1,000 records the half is sealed and
// dropped, as commits do.
func BenchmarkRecord(b *testing.B) {
	j, err := journal.Open(filepath.Join(b.TempDir(), "settle.db"), journal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("wordle:games:%08d", i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if !j.Record(keys[i%len(keys)], dualwrite.MarkUnsettled) {
			b.Fatal("Record refused")
		}
		if i%len(keys) == len(keys)-1 {
			b.StopTimer()
			j.Seal()
			if err := j.Commit(ctx, nil, false); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
}
