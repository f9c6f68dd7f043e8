package memory_test

import (
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvtest"
)

func TestConformance(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	kvtest.Run(t, kvtest.Harness{
		New:     func(*testing.T) kv.Store { return memory.New(memory.Config{Clock: clk}) },
		Advance: clk.Advance,
		Now:     clk.Now,
	})
}
