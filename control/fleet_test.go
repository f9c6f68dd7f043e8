package control

import (
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// The Fleet's watermark of a namespace is the oldest that another live
// instance published for it, else the time the heartbeats were read;
// nothing before the first read; its own, a stopped instance's and a stale
// one's (past LiveFor: taken for dead) never hold it back; while the
// heartbeats cannot be read it stays where it was.
func TestFleetWatermarkFromHeartbeats(t *testing.T) {
	board := &blindBoard{Board: NewMemoryBoard()}
	clk := clock.NewFake(time.Unix(1e9, 0))
	fleet := NewFleet(board.Board) // its claims; blindBoard hides them
	ns := fleet.Namespace("ns")
	tgt := &fakeTarget{report: Heartbeat{Drained: true, Watermarks: map[string]time.Time{"ns": clk.Now().Add(-time.Hour)}}}
	a, err := NewFollower(Config{Board: board, Target: tgt, Instance: "a", Initial: dualwrite.Shadow, Fleet: fleet}, WithClock(clk), WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	if w := ns.Watermark(t.Context()); !w.IsZero() {
		t.Fatalf("before any heartbeat: %v; want zero", w)
	}
	expect := func(what string, want time.Time) {
		t.Helper()
		a.beat(t.Context())
		if w := ns.Watermark(t.Context()); !w.Equal(want) {
			t.Fatalf("%s: watermark %v; want %v", what, w, want)
		}
	}
	expect("alone (its own watermark does not count)", clk.Now())
	beat := func(name string, w time.Time, stopped bool) {
		t.Helper()
		h := Heartbeat{Instance: name, Stage: dualwrite.Shadow, At: clk.Now(), Stopped: stopped, Watermarks: map[string]time.Time{"ns": w, "other": w.Add(-time.Hour)}}
		if err := board.Beat(t.Context(), h); err != nil {
			t.Fatal(err)
		}
	}
	bw := clk.Now().Add(-30 * time.Second)
	beat("b", bw, false)
	expect("b has a copy of 30 s ago on its way", bw)
	cw := clk.Now().Add(-10 * time.Second)
	beat("c", cw.Add(-time.Hour), true)
	expect("c stopped", bw)
	clk.Advance(time.Second)
	beat("b", clk.Now(), false)
	expect("b drained", clk.Now())
	board.mu.Lock()
	board.blind = true
	board.mu.Unlock()
	was := clk.Now()
	clk.Advance(time.Minute)
	expect("the heartbeats cannot be read", was)
	board.mu.Lock()
	board.blind = false
	board.mu.Unlock()
	expect("b's heartbeat is past LiveFor: taken for dead", clk.Now())
	first, err := ns.Claim(t.Context(), [32]byte{1}, time.Minute)
	again, err2 := fleet.Namespace("other").Claim(t.Context(), [32]byte{1}, time.Minute)
	if err != nil || err2 != nil || !first || again {
		t.Fatalf("claims: %v %v, %v %v; want the first only", first, err, again, err2)
	}
}
