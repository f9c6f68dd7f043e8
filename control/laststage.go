package control

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// StageFile is the file in an instance's journal directory that holds the
// stage the instance last ran ("Starting without the Board" in the package
// doc).
const StageFile = "stage"

// LastStage reads the stage the instance last ran from dir; false when it
// keeps none (no directory, a first start, an unreadable file).
func LastStage(dir string) (dualwrite.Stage, bool) {
	if dir == "" {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join(dir, StageFile))
	if err != nil {
		return 0, false
	}
	s, err := dualwrite.ParseStage(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, false
	}
	return s, true
}

// KeepStage writes the stage the instance runs to dir, atomically (a
// rename: a crash leaves the old stage or the new one). An empty dir keeps
// nothing.
func KeepStage(dir string, s dualwrite.Stage) error {
	if dir == "" {
		return nil
	}
	path := filepath.Join(dir, StageFile)
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

// ServesDetached reports whether an instance may serve in stage s without
// having read the stage document: only while Workers KV is authoritative
// (a flip waits for the fence and for every instance it can see). From
// live on, MongoDB's authority comes from the document alone.
func ServesDetached(s dualwrite.Stage) bool { return s < dualwrite.Live }
