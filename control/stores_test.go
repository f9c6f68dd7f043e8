package control

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// Two replicas of a program's own store, each one Stores and a Follower
// given no Fleet: each Follower takes its Stores' Fleet, so that after the
// heartbeats each store knows the other's watermark (a store without it
// knows nothing, and would confirm what the other's copies explain); the
// heartbeat carries the namespace's watermark, and Apply keeps the stage
// in the directory. A store added without a Fleet and told of the other
// replica says so, once.
func TestStoresAreTheTargetAndTheFleet(t *testing.T) {
	board := NewMemoryBoard()
	primary, shadow := memory.New(memory.Config{}), memory.New(memory.Config{})
	cfg := dualwrite.Config{Primary: primary, Shadow: shadow, Stage: dualwrite.DualWrite}
	var followers []*Follower
	var stores []*Stores
	dirs := []string{t.TempDir(), t.TempDir()}
	for i, name := range []string{"a", "b"} {
		s := NewStores(board, dirs[i], quiet)
		d, err := s.New("ns", cfg, dualwrite.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close(t.Context()) })
		f, err := NewFollower(Config{Board: board, Target: s, Instance: name, Initial: dualwrite.DualWrite}, WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.Close)
		followers, stores = append(followers, f), append(stores, s)
	}
	followers[0].beat(t.Context())
	for i, s := range stores {
		if w := s.Fleet().Namespace("ns").Watermark(t.Context()); w.IsZero() {
			t.Errorf("replica %d's fleet knows no watermark after the heartbeats", i)
		}
		if h := s.Report(t.Context()); !h.Drained || h.Watermarks["ns"].IsZero() {
			t.Errorf("replica %d's heartbeat: %+v; want drained, with the namespace's watermark", i, h)
		}
		if st, ok := LastStage(dirs[i]); !ok || st != dualwrite.DualWrite {
			t.Errorf("replica %d kept %s (%v); want dualwrite", i, st, ok)
		}
	}

	var logs bytes.Buffer
	alone := NewStores(board, "", quiet)
	d, err := dualwrite.New(cfg, dualwrite.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(t.Context())
	alone.Add("ns", d)
	f, err := NewFollower(Config{Board: board, Target: alone, Instance: "c", Initial: dualwrite.DualWrite, HeartbeatInterval: time.Hour}, WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.beat(t.Context())
	if n := strings.Count(logs.String(), "its Config.Fleet is nil"); n != 1 {
		t.Errorf("a store without a Fleet, told of other replicas, warned %d times; want once:\n%s", n, logs.String())
	}
}
