package settle_test

import (
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
	mongotest.Main(m, &srv, func() error {
		if writerBin != "" {
			_ = os.RemoveAll(filepath.Dir(writerBin))
		}
		return nil
	})
}
