package service

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// stageFile is the file in --journal-dir that holds the stage this instance
// last ran: what it may run when it starts with the control board (in
// MongoDB) out of reach.
const stageFile = "stage"

// lastStage reads the stage this instance last ran from dir; false when it
// keeps none (no --journal-dir, a first start, an unreadable file).
func lastStage(dir string) (dualwrite.Stage, bool) {
	if dir == "" {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join(dir, stageFile))
	if err != nil {
		return 0, false
	}
	s, err := dualwrite.ParseStage(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, false
	}
	return s, true
}

// keepStage writes the stage the instance runs to dir, atomically (a
// rename): a crash leaves the old stage or the new one, never half a name.
func keepStage(dir string, s dualwrite.Stage) error {
	if dir == "" {
		return nil
	}
	path := filepath.Join(dir, stageFile)
	if old, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(old)) == s.String() {
		return nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(s.String()+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// servesDetached reports whether an instance may serve in stage s without
// having read the stage document: only while Workers KV is authoritative,
// where its writes go where the fleet's go until a flip, and a flip waits
// for the fence and for every instance it can see. From live on, MongoDB's
// authority comes from the document alone, and nothing unverified becomes
// authoritative.
func servesDetached(s dualwrite.Stage) bool { return s < dualwrite.Live }
