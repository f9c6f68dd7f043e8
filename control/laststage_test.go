package control

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// TestLastStage: the stage an instance ran is kept in its journal directory
// and read back; nothing readable is no stage; and only the stages where
// Workers KV is authoritative may be served without the stage document.
func TestLastStage(t *testing.T) {
	dir := t.TempDir()
	if _, known := LastStage(dir); known {
		t.Fatal("a stage in an empty directory")
	}
	if _, known := LastStage(""); known {
		t.Fatal("a stage without a directory")
	}
	for _, s := range []dualwrite.Stage{dualwrite.Shadow, dualwrite.Handover, dualwrite.Live} {
		if err := KeepStage(dir, s); err != nil {
			t.Fatal(err)
		}
		if got, known := LastStage(dir); !known || got != s {
			t.Fatalf("kept %s, read %s (%v)", s, got, known)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, StageFile), []byte("halfway"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, known := LastStage(dir); known {
		t.Fatal("a stage from a file that names none")
	}
	for _, s := range dualwrite.Stages {
		if want := !s.ShadowAuthoritative(); ServesDetached(s) != want {
			t.Errorf("ServesDetached(%s) = %v, want %v", s, !want, want)
		}
	}
}
