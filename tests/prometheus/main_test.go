package prometheus_test

import (
	"testing"

	"github.com/kvshadow/kvshadow/tests/mongotest"
)

var srv *mongotest.Server

func TestMain(m *testing.M) { mongotest.Main(m, &srv) }
