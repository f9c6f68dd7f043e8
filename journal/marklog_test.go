package journal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/journal"
)

func load(t *testing.T, j *journal.Journal) map[string]dualwrite.Mark {
	t.Helper()
	marks, _, err := j.Load(context.Background())
	must(t, err)
	return marks
}

// A record is in the file as soon as Record returns, with no commit and
// no sync: the next Open finds it (Recovered counts what only the log
// held) and commits it. A record a commit covered is dropped with its
// half, so a key settled since is not brought back.
func TestRecordsSurviveWithoutCommit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "settle.db")
	j := open(t, path)
	if !j.Record("wordle:a", dualwrite.MarkUnsettled) || !j.Record("wordle:b", dualwrite.MarkUnsettled) {
		t.Fatal("Record refused")
	}
	j.Seal()
	must(t, j.Commit(ctx, map[string]dualwrite.Mark{"wordle:a": dualwrite.MarkUnsettled, "wordle:b": dualwrite.MarkUnsettled}, false))
	j.Record("wordle:c", dualwrite.MarkUnsettled)
	j.Record("wordle:b", dualwrite.MarkDirty)
	j.Seal()
	must(t, j.Commit(ctx, map[string]dualwrite.Mark{"wordle:a": dualwrite.MarkSettled, "wordle:b": dualwrite.MarkDirty, "wordle:c": dualwrite.MarkUnsettled}, false))
	j.Record("wordle:d", dualwrite.MarkUnsettled)
	j.Seal() // sealed, not committed
	j.Record("wordle:e", dualwrite.MarkUnsettled)
	must(t, j.Close()) // no commit of d or e: as if the process had died

	j = open(t, path)
	if got := load(t, j); len(got) != 4 || got["wordle:b"] != dualwrite.MarkDirty || got["wordle:c"] != dualwrite.MarkUnsettled ||
		got["wordle:d"] != dualwrite.MarkUnsettled || got["wordle:e"] != dualwrite.MarkUnsettled {
		t.Fatalf("after the restart the journal holds %v; want b dirty, c, d and e unsettled, a settled", got)
	}
	if n := j.Recovered(); n != 2 {
		t.Fatalf("Recovered = %d, want 2 (d, e)", n)
	}
	must(t, j.Close())
	j = open(t, path) // the log was emptied into the file
	defer j.Close()
	if n, got := j.Recovered(), load(t, j); n != 0 || len(got) != 4 {
		t.Fatalf("second restart: recovered %d, %v", n, got)
	}
}

// A record cut short (the process died inside the copy) ends the replay
// without failing Open; the records before it are kept.
func TestTornRecordEndsReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settle.db")
	j := open(t, path)
	j.Record("wordle:a", dualwrite.MarkUnsettled)
	j.Record("wordle:torn", dualwrite.MarkUnsettled)
	must(t, j.Close())
	raw, err := os.ReadFile(path + ".marks")
	must(t, err)
	// The second record's last byte, after a 16-byte header and the first
	// record (7 bytes and the key).
	at := 16 + 7 + len("wordle:a") + 7 + len("wordle:torn") - 1
	raw[at] ^= 0xff
	must(t, os.WriteFile(path+".marks", raw, 0o600))
	j = open(t, path)
	defer j.Close()
	if got := load(t, j); len(got) != 1 || got["wordle:a"] != dualwrite.MarkUnsettled {
		t.Fatalf("after a torn record the journal holds %v, want wordle:a alone", got)
	}
}

// A log whose active half is full refuses records (the Store counts them)
// until a commit drops the sealed half.
func TestFullLogRefuses(t *testing.T) {
	ctx := context.Background()
	j, err := journal.Open(filepath.Join(t.TempDir(), "settle.db"), journal.Options{LogSize: 8 << 10})
	must(t, err)
	defer j.Close()
	n := 0
	for ; j.Record(fmt.Sprintf("wordle:%04d", n), dualwrite.MarkUnsettled); n++ {
		if n > 1000 {
			t.Fatal("a 4 KiB half took more than 1,000 records")
		}
	}
	j.Seal()
	if !j.Record("wordle:next", dualwrite.MarkUnsettled) {
		t.Fatal("the other half refused a record after Seal")
	}
	changes := map[string]dualwrite.Mark{}
	for i := range n {
		changes[fmt.Sprintf("wordle:%04d", i)] = dualwrite.MarkUnsettled
	}
	must(t, j.Commit(ctx, changes, false))
	if len(load(t, j)) != n {
		t.Fatal("the commit lost marks")
	}
}
