package settle_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvshadow/kvshadow/tests/mongotest"
)

// srv is the MongoDB-compatible server of the package's tests.
var srv *mongotest.Server

// TestMain runs the tests, or, in a child process, the writer alone.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	s, err := mongotest.Start(context.Background(), mongotest.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv = s
	code := m.Run()
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if writerBin != "" {
		_ = os.RemoveAll(filepath.Dir(writerBin))
	}
	os.Exit(code)
}
