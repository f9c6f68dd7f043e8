package dualwrite

import (
	"sync/atomic"
	"time"

	"github.com/kvshadow/kvshadow/clock"
)

// watchdog cancels the lanes' operations that outlive ShadowTimeout. One
// goroutine and at most one timer serve every lane, on the Store's clock, so
// that a test moves time instead of waiting for it.
type watchdog struct {
	clock clock.Clock
	lanes []*lane
	// armed is the deadline the watchdog sleeps until, 0 while it waits
	// for work. A timeout grows with the bytes an operation carries, so a
	// new deadline may precede the armed one: it wakes the watchdog then.
	armed atomic.Int64
	kick  chan struct{}
}

// started tells the watchdog that a lane registered deadline.
func (w *watchdog) started(deadline int64) {
	if a := w.armed.Load(); a == 0 || deadline < a {
		kick(w.kick)
	}
}

func (w *watchdog) run(quit <-chan struct{}) {
	for {
		// Disarm before scanning: a deadline registered after the scan
		// then finds the watchdog idle and kicks it.
		w.armed.Store(0)
		now := w.clock.Now()
		next := w.expire(now)
		if next == 0 {
			select {
			case <-w.kick:
				continue
			case <-quit:
				return
			}
		}
		w.armed.Store(next)
		t := w.clock.NewTimer(time.Duration(next - now.UnixNano()))
		// Time that passed since now (a loaded machine, a test moving
		// its clock) would make the timer fire that much past next.
		if w.clock.Now().UnixNano() >= next {
			t.Stop()
			continue
		}
		select {
		case <-t.C():
		case <-w.kick:
			t.Stop()
		case <-quit:
			t.Stop()
			return
		}
	}
}

// expire cancels the operations due at now and returns the earliest
// deadline still pending, 0 for none.
func (w *watchdog) expire(now time.Time) int64 {
	var next int64
	for _, l := range w.lanes {
		l.mu.Lock()
		c, d := l.cancel, l.deadline
		if c != nil && d <= now.UnixNano() {
			l.claimLocked()
		}
		l.mu.Unlock()
		switch {
		case c == nil:
		case d <= now.UnixNano():
			c(errTimeout)
		case next == 0 || d < next:
			next = d
		}
	}
	return next
}
