package control

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// peerTarget is a fakeTarget that records what it is told of its peers.
type peerTarget struct {
	fakeTarget
	pmu  sync.Mutex
	told []time.Time
}

func (t *peerTarget) SetPeersUntil(u time.Time) {
	t.pmu.Lock()
	defer t.pmu.Unlock()
	t.told = append(t.told, u)
}

func (t *peerTarget) last() (time.Time, int) {
	t.pmu.Lock()
	defer t.pmu.Unlock()
	if len(t.told) == 0 {
		return time.Time{}, 0
	}
	return t.told[len(t.told)-1], len(t.told)
}

// blindBoard is a Board whose heartbeats cannot be read while blind.
type blindBoard struct {
	Board
	mu    sync.Mutex
	blind bool
}

func (b *blindBoard) Instances(ctx context.Context) ([]Heartbeat, error) {
	b.mu.Lock()
	blind := b.blind
	b.mu.Unlock()
	if blind {
		return nil, ErrBoard
	}
	return b.Board.Instances(ctx)
}

// The Follower tells its Target until when another instance may have
// written: nothing while it is alone, a live instance's heartbeat plus
// LiveFor, a stopped one's last heartbeat, now for one forgotten since the
// last look, as if one were alive while the heartbeats cannot be read; and
// the time never moves back.
func TestTheTargetLearnsUntilWhenPeersMayHaveWritten(t *testing.T) {
	board := &blindBoard{Board: NewMemoryBoard()}
	clk := clock.NewFake(time.Unix(1e9, 0))
	tgt := &peerTarget{fakeTarget: fakeTarget{report: Heartbeat{Drained: true}}}
	a, err := NewFollower(Config{Board: board, Target: tgt, Instance: "a", Initial: dualwrite.Live}, WithClock(clk), WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	liveFor := 3 * DefaultHeartbeatInterval
	// Not started: each heartbeat below is the test's own, on one
	// goroutine, as the Follower's loop makes them (Start makes the first).
	beat := func() { a.beat(t.Context()) }
	beat()
	expect := func(what string, want time.Time, calls int) {
		t.Helper()
		got, n := tgt.last()
		if !got.Equal(want) || n != calls || !a.Status().PeersUntil.Equal(want) {
			t.Fatalf("%s: told %v (%d calls), status %v; want %v (%d calls)", what, got, n, a.Status().PeersUntil, want, calls)
		}
	}
	expect("alone at Start", time.Time{}, 0)
	beat()
	expect("still alone", time.Time{}, 0)

	// b beats at T0: it may write until T0 + LiveFor.
	t0 := clk.Now()
	if err := board.Beat(t.Context(), Heartbeat{Instance: "b", At: t0}); err != nil {
		t.Fatal(err)
	}
	beat()
	expect("b alive", t0.Add(liveFor), 1)

	// b stops at T1, later than T0 + LiveFor: its last heartbeat bounds it.
	clk.Advance(time.Minute)
	t1 := clk.Now()
	if err := board.Beat(t.Context(), Heartbeat{Instance: "b", At: t1, Stopped: true, Unsettled: 1}); err != nil {
		t.Fatal(err)
	}
	beat()
	expect("b stopped", t1, 2)

	// An older heartbeat of c does not move the time back.
	if err := board.Beat(t.Context(), Heartbeat{Instance: "c", At: t0.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	beat()
	expect("c stale", t1, 3)

	// b is forgotten: it wrote until it left, some time before now.
	clk.Advance(time.Minute)
	if err := board.Forget(t.Context(), "b"); err != nil {
		t.Fatal(err)
	}
	beat()
	expect("b forgotten", clk.Now(), 4)
	forgotten := clk.Now()
	clk.Advance(time.Minute)
	beat()
	expect("b gone before the last look", forgotten, 5)

	// Blind: whoever may be writing is hidden.
	board.mu.Lock()
	board.blind = true
	board.mu.Unlock()
	clk.Advance(time.Minute)
	beat()
	expect("the board blind", clk.Now().Add(liveFor), 6)
	if a.Status().BoardErr == "" {
		t.Fatal("the failure to read the heartbeats is not recorded")
	}
}

// Start's first heartbeat tells the Target of the instances already on the
// Board, before Start returns and the instance serves.
func TestStartTellsThePeersBeforeServing(t *testing.T) {
	board := NewMemoryBoard()
	clk := clock.NewFake(time.Unix(1e9, 0))
	if err := board.Beat(t.Context(), Heartbeat{Instance: "b", At: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	tgt := &peerTarget{fakeTarget: fakeTarget{report: Heartbeat{Drained: true}}}
	a, err := NewFollower(Config{Board: board, Target: tgt, Instance: "a", Initial: dualwrite.Live}, WithClock(clk), WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	if got, n := tgt.last(); n != 1 || !got.Equal(clk.Now().Add(3*DefaultHeartbeatInterval)) {
		t.Fatalf("told %v (%d calls) by Start", got, n)
	}
}
