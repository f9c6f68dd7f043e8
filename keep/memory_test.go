package keep_test

import (
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/keep"
	"github.com/kvshadow/kvshadow/keep/keeptest"
)

var start = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func TestMemoryStore(t *testing.T) {
	keeptest.Run(t, true, func(c keep.Config) keep.Store { return keep.NewMemoryStore(c) })
}
