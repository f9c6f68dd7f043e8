package keep_test

import (
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/keep"
	"github.com/kvshadow/kvshadow/keep/keeptest"
)

var start = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func TestMemoryStore(t *testing.T) {
	clk := clock.NewFake(start)
	keeptest.Run(t, clk, true, func() keep.Store { return keep.NewMemoryStore(keep.Config{KeepFor: keeptest.KeepFor, Clock: clk}) })
}
