package botkv_test

import (
	"testing"

	"github.com/kvshadow/kvshadow/tests/mongotest"
)

// srv is the server every test of the package shares; each test works in a
// database of its own.
var srv *mongotest.Server

func TestMain(m *testing.M) { mongotest.Main(m, &srv) }
