package clock_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/clock"
)

func TestFake(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := clock.NewFake(start)
	a := f.NewTimer(2 * time.Second)
	b := f.NewTimer(5 * time.Second)
	c := f.NewTimer(3 * time.Second)
	if f.Timers() != 3 {
		t.Fatalf("Timers() = %d, want 3", f.Timers())
	}
	if !c.Stop() || c.Stop() {
		t.Fatal("Stop: want true once, then false")
	}
	f.Advance(time.Second)
	select {
	case <-a.C():
		t.Fatal("timer fired early")
	default:
	}
	f.Advance(time.Second)
	if got := <-a.C(); !got.Equal(start.Add(2 * time.Second)) {
		t.Fatalf("timer fired at %v", got)
	}
	f.Advance(10 * time.Second)
	<-b.C()
	select {
	case <-c.C():
		t.Fatal("a stopped timer fired")
	default:
	}
	if f.Timers() != 0 || !f.Now().Equal(start.Add(12*time.Second)) {
		t.Fatalf("Timers() = %d, Now() = %v", f.Timers(), f.Now())
	}
	if z := f.NewTimer(0); len(z.C()) != 1 {
		t.Fatal("a zero timer does not fire at once")
	}
}

func TestOrReal(t *testing.T) {
	if _, ok := clock.OrReal(nil).(clock.Real); !ok {
		t.Fatal("OrReal(nil) is not the system clock")
	}
	f := clock.NewFake(time.Unix(0, 0))
	if clock.OrReal(f) != f {
		t.Fatal("OrReal replaced a given clock")
	}
	tm := clock.Real{}.NewTimer(time.Hour)
	if !tm.Stop() {
		t.Fatal("real timer did not stop")
	}
}

// Sleep ends when its timer fires on the clock it was given, or at once
// with ctx's error when ctx ends first.
func TestSleep(t *testing.T) {
	f := clock.NewFake(time.Unix(0, 0))
	done := make(chan error, 1)
	go func() { done <- clock.Sleep(context.Background(), f, time.Minute) }()
	for f.Timers() == 0 {
		runtime.Gosched()
	}
	f.Advance(time.Minute)
	if err := <-done; err != nil {
		t.Fatalf("Sleep after the clock moved: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := clock.Sleep(ctx, f, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep with its context ended: %v, want context.Canceled", err)
	}
}

// TestEveryReturnsWhenTheContextEnds: it would hang if Every went on.
func TestEveryReturnsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	clock.Every(ctx, time.Millisecond, func() {
		if calls++; calls == 3 {
			cancel()
		}
	})
	if calls < 3 { // one more may come: a tick ready with the end is picked at random
		t.Fatalf("fn was called %d times, want 3", calls)
	}
}
