package budget

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/clock"
)

// Budget caps requests: at most Requests in any window of Per. Requests < 0
// means no cap; the zero value means the default of whoever takes it.
type Budget struct {
	Requests int
	Per      time.Duration
}

// WorkersKV is Workers KV's account API limit.
var WorkersKV = Budget{Requests: 1200, Per: 5 * time.Minute}

// Unlimited is a Budget with no cap.
var Unlimited = Budget{Requests: -1}

// String returns "1200/5m0s", or "unlimited".
func (b Budget) String() string {
	if b.Requests < 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%d/%s", b.Requests, b.Per)
}

// Limiter enforces a Budget. It is safe for concurrent use.
type Limiter struct {
	clock clock.Clock
	max   int // <= 0: no cap
	per   time.Duration

	mu     sync.Mutex
	starts []time.Time // ring of the last max start times
	next   int         // ring index of the oldest start
	paused time.Time   // no request starts before this
}

// New returns a Limiter for b on clk (nil: the system clock). A Budget whose
// Requests is not positive has no cap.
func New(b Budget, clk clock.Clock) *Limiter {
	l := &Limiter{clock: clock.OrReal(clk), max: b.Requests, per: b.Per}
	if l.max > 0 {
		l.starts = make([]time.Time, 0, l.max)
	}
	return l
}

// Wait blocks until a request may start and books it, or returns ctx's
// error.
func (l *Limiter) Wait(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		d := l.reserve()
		if d <= 0 {
			return nil
		}
		if err := clock.Sleep(ctx, l.clock, d); err != nil {
			return err
		}
	}
}

// TryTake books a request if one may start now, and reports whether it did.
func (l *Limiter) TryTake() bool { return l.reserve() <= 0 }

// reserve books a start now and returns 0, or returns how long to wait.
func (l *Limiter) reserve() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	if d, _ := l.delay(now); d > 0 || l.max <= 0 {
		return d
	}
	if len(l.starts) < l.max {
		l.starts = append(l.starts, now)
	} else {
		l.starts[l.next] = now
		l.next = (l.next + 1) % l.max
	}
	return 0
}

// Delay returns how long a request asked for now would wait, without
// booking one, and whether the wait is a Pause rather than the window: what
// a progress line shows as "resumes in".
func (l *Limiter) Delay() (d time.Duration, paused bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.delay(l.clock.Now())
}

// delay is Delay at now, l.mu held.
func (l *Limiter) delay(now time.Time) (time.Duration, bool) {
	if now.Before(l.paused) {
		return l.paused.Sub(now), true
	}
	if l.max > 0 && len(l.starts) == l.max {
		if free := l.starts[l.next].Add(l.per); now.Before(free) {
			return free.Sub(now), false
		}
	}
	return 0, false
}

// Pause holds every request back for d from now, unless a longer pause is
// already in force.
func (l *Limiter) Pause(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if until := l.clock.Now().Add(d); until.After(l.paused) {
		l.paused = until
	}
}

// Used returns how many requests started in the current window, and the
// cap (-1 when there is none).
func (l *Limiter) Used() (n, max int) {
	if l.max <= 0 {
		return 0, -1
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	since := l.clock.Now().Add(-l.per)
	for _, t := range l.starts {
		if t.After(since) {
			n++
		}
	}
	return n, l.max
}
