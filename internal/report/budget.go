package report

import (
	"context"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/clock"
)

// limiter enforces a Budget as a sliding window: a request may start when
// fewer than Requests started in the last Per. A token bucket would allow
// twice the budget in the first window (its burst plus its refill), and
// Workers KV counts requests per window, so the window is kept exactly, as
// the start times of the last Requests requests.
//
// It also holds every caller back while a store has asked to be left alone
// (Retry-After), so that one 429 pauses the whole side, not one worker.
type limiter struct {
	clock clock.Clock
	max   int           // < 0: no cap
	per   time.Duration //

	mu     sync.Mutex
	starts []time.Time // ring of the last max start times
	next   int         // ring index of the oldest start
	paused time.Time   // no request starts before this
}

func newLimiter(b Budget, clk clock.Clock) *limiter {
	l := &limiter{clock: clk, max: b.Requests, per: b.Per}
	if l.max > 0 {
		l.starts = make([]time.Time, 0, l.max)
	}
	return l
}

// wait blocks until a request may start, and books it.
func (l *limiter) wait(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		d := l.reserve()
		if d <= 0 {
			return nil
		}
		t := l.clock.NewTimer(d)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// reserve books a start now and returns 0, or returns how long to wait.
func (l *limiter) reserve() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	if now.Before(l.paused) {
		return l.paused.Sub(now)
	}
	if l.max <= 0 {
		return 0
	}
	if len(l.starts) < l.max {
		l.starts = append(l.starts, now)
		return 0
	}
	if free := l.starts[l.next].Add(l.per); now.Before(free) {
		return free.Sub(now)
	}
	l.starts[l.next] = now
	l.next = (l.next + 1) % l.max
	return 0
}

// pause holds every request back for d from now, unless a longer pause is
// already in force.
func (l *limiter) pause(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if until := l.clock.Now().Add(d); until.After(l.paused) {
		l.paused = until
	}
}

// used returns how many requests started in the current window, and the
// cap (-1 when there is none).
func (l *limiter) used() (n, max int) {
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
