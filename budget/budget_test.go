package budget_test

import (
	"context"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/budget"
	"github.com/kvshadow/kvshadow/clock"
)

var start = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// The window slides: a fourth request waits until the first is a whole
// period old, not until a bucket refills.
func TestSlidingWindow(t *testing.T) {
	clk := clock.NewFake(start)
	l := budget.New(budget.Budget{Requests: 3, Per: time.Minute}, clk)
	for i := range 3 {
		if !l.TryTake() {
			t.Fatalf("request %d refused within the budget", i)
		}
		clk.Advance(10 * time.Second)
	}
	if l.TryTake() {
		t.Fatal("a fourth request in the window was booked")
	}
	if n, max := l.Used(); n != 3 || max != 3 {
		t.Fatalf("Used = %d/%d, want 3/3", n, max)
	}
	clk.Advance(30 * time.Second) // the first is now 60 s old
	if !l.TryTake() {
		t.Fatal("a request refused once the oldest left the window")
	}
	if l.TryTake() {
		t.Fatal("the second of the window was booked early")
	}
}

func TestWaitBlocksUntilRoom(t *testing.T) {
	clk := clock.NewFake(start)
	l := budget.New(budget.Budget{Requests: 1, Per: time.Minute}, clk)
	must(t, l.Wait(context.Background()))
	done := make(chan error, 1)
	go func() { done <- l.Wait(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v inside the window", err)
	default:
	}
	for {
		select {
		case err := <-done:
			must(t, err)
			if got := clk.Now().Sub(start); got < time.Minute {
				t.Fatalf("Wait returned after %s, want a minute", got)
			}
			return
		default:
			clk.Advance(time.Second)
		}
	}
}

func TestWaitEndsWithContext(t *testing.T) {
	l := budget.New(budget.Budget{Requests: 1, Per: time.Hour}, clock.NewFake(start))
	must(t, l.Wait(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Wait(ctx); err != context.Canceled {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
}

// A pause holds back even a budget without a cap.
func TestPause(t *testing.T) {
	clk := clock.NewFake(start)
	l := budget.New(budget.Unlimited, clk)
	if !l.TryTake() {
		t.Fatal("unlimited budget refused")
	}
	l.Pause(10 * time.Second)
	l.Pause(time.Second) // shorter: no effect
	if l.TryTake() {
		t.Fatal("request booked during a pause")
	}
	clk.Advance(10 * time.Second)
	if !l.TryTake() {
		t.Fatal("request refused after the pause")
	}
	if _, max := l.Used(); max != -1 {
		t.Fatalf("Used cap = %d, want -1", max)
	}
}

func TestString(t *testing.T) {
	if got := budget.WorkersKV.String(); got != "1200/5m0s" {
		t.Fatalf("WorkersKV = %q", got)
	}
	if got := budget.Unlimited.String(); got != "unlimited" {
		t.Fatalf("Unlimited = %q", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Delay says how long the next request would wait, and why, without
// booking it.
func TestDelay(t *testing.T) {
	clk := clock.NewFake(start)
	l := budget.New(budget.Budget{Requests: 2, Per: time.Minute}, clk)
	if d, paused := l.Delay(); d != 0 || paused {
		t.Fatalf("fresh: %s, %v", d, paused)
	}
	l.TryTake()
	clk.Advance(15 * time.Second)
	l.TryTake()
	for range 2 { // asking does not book
		if d, paused := l.Delay(); d != 45*time.Second || paused {
			t.Fatalf("window full: %s, %v; want 45s by the window", d, paused)
		}
	}
	l.Pause(2 * time.Minute)
	if d, paused := l.Delay(); d != 2*time.Minute || !paused {
		t.Fatalf("paused: %s, %v", d, paused)
	}
	if d, _ := budget.New(budget.Unlimited, clk).Delay(); d != 0 {
		t.Fatalf("unlimited: %s", d)
	}
}
