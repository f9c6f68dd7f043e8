package dualwrite

import (
	"context"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/clock"
)

// lateTimerClock moves its time forward by step as a timer is made, once:
// time passing between the watchdog's reading of the clock and its arming
// of a timer, which a loaded machine does for real and a test does when it
// advances the fake clock at that moment.
type lateTimerClock struct {
	*clock.Fake
	step time.Duration
	once bool
}

func (c *lateTimerClock) NewTimer(d time.Duration) clock.Timer {
	if !c.once {
		c.once = true
		c.Advance(c.step)
	}
	return c.Fake.NewTimer(d)
}

// A deadline that passes between the watchdog's reading of the clock and
// the timer it arms for that deadline is expired then, not a timer's
// length later.
func TestWatchdogExpiresADeadlinePassedWhileArming(t *testing.T) {
	fake := clock.NewFake(time.Unix(1000, 0))
	clk := &lateTimerClock{Fake: fake, step: time.Second}
	l := newLane(0)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	l.cancel, l.deadline = cancel, fake.Now().Add(time.Second).UnixNano()
	w := &watchdog{clock: clk, lanes: []*lane{l}, kick: make(chan struct{}, 1)}
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); w.run(quit) }()
	defer func() { close(quit); <-done }()
	select {
	case <-ctx.Done():
		if context.Cause(ctx) != errTimeout {
			t.Fatalf("cause %v, want the timeout", context.Cause(ctx))
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the operation past its deadline was not canceled (clock at +%v, %d timers pending)", fake.Now().Sub(time.Unix(1000, 0)), fake.Timers())
	}
}
