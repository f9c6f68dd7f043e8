// Package botkvtest is what a Go bot's tests use with botkv: KeepStage
// gives a test's journal directory the stage a bot that ran before would
// have kept there, so that botkv.Open starts detached with MongoDB down
// (docs/go-bot.md, "In tests"). It takes a testing.TB, so that no
// production start can fake a stage it never ran.
package botkvtest

import (
	"testing"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// KeepStage keeps stage in dir (KVSHADOW_JOURNAL_DIR) as a bot that ran it
// would have: with MongoDB down, botkv.Open then serves it detached, if
// Workers KV is authoritative in it (off to handover), and fails with
// botkv.ErrMongoDBDown otherwise, as a restarted bot would.
func KeepStage(tb testing.TB, dir string, stage dualwrite.Stage) {
	tb.Helper()
	if dir == "" || !stage.Valid() {
		tb.Fatalf("botkvtest.KeepStage: want a directory (KVSHADOW_JOURNAL_DIR) and a stage, not %q and %s", dir, stage)
	}
	if err := control.KeepStage(dir, stage); err != nil {
		tb.Fatalf("botkvtest.KeepStage: %v", err)
	}
}
