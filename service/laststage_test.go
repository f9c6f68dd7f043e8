package service

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
	if _, known := lastStage(dir); known {
		t.Fatal("a stage in an empty directory")
	}
	if _, known := lastStage(""); known {
		t.Fatal("a stage without a directory")
	}
	for _, s := range []dualwrite.Stage{dualwrite.Shadow, dualwrite.Handover, dualwrite.Live} {
		if err := keepStage(dir, s); err != nil {
			t.Fatal(err)
		}
		if got, known := lastStage(dir); !known || got != s {
			t.Fatalf("kept %s, read %s (%v)", s, got, known)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, stageFile), []byte("halfway"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, known := lastStage(dir); known {
		t.Fatal("a stage from a file that names none")
	}
	for _, s := range dualwrite.Stages {
		if want := !s.ShadowAuthoritative(); servesDetached(s) != want {
			t.Errorf("servesDetached(%s) = %v, want %v", s, !want, want)
		}
	}
}
