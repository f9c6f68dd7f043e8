package dualwrite

import (
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
)

// errBreakerOpen is the cause of an operation the breaker refused.
var errBreakerOpen = errors.New("dualwrite: circuit breaker open")

// tripping marks a breaker that has just opened and whose open period has
// not been timed yet: it counts as open.
const tripping = math.MaxInt64

// breaker wraps gobreaker's two-step breaker. gobreaker counts failures and
// runs the half-open probes; the open period is timed here, on the Store's
// clock, because gobreaker reads the wall clock: gobreaker's own Timeout is
// a nanosecond, and while openUntil lies ahead nothing reaches gobreaker.
type breaker struct {
	role    Role
	cb      *gobreaker.TwoStepCircuitBreaker[struct{}]
	clock   clock.Clock
	openFor time.Duration
	// openUntil is the end of the open period in unix ns; 0 when the
	// breaker never opened, tripping while its period is being set.
	openUntil atomic.Int64

	events chan<- BreakerEvent
	lost   *atomic.Uint64
	closed chan<- struct{} // signalled when the breaker closes: repair now
}

func newBreaker(role Role, cfg BreakerConfig, clk clock.Clock, events chan<- BreakerEvent, lost *atomic.Uint64, closed chan<- struct{}) *breaker {
	b := &breaker{role: role, clock: clk, openFor: cfg.OpenTimeout, events: events, lost: lost, closed: closed}
	failures := uint32(cfg.FailuresToOpen)
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:          role.String(),
		MaxRequests:   uint32(cfg.HalfOpenRequests),
		Interval:      cfg.CountInterval,
		Timeout:       time.Nanosecond,
		ReadyToTrip:   func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		IsSuccessful:  func(err error) bool { return err == nil || errors.Is(err, kv.ErrNotFound) },
		IsExcluded:    excluded,
		OnStateChange: b.onStateChange,
	})
	return b
}

// excluded lists the errors that say nothing of the store's health: inputs
// the store refused (the primary accepted them, so they are a mismatch of
// rules, not an outage), operations abandoned at Close, and those the
// breaker itself turned away.
func excluded(err error) bool {
	switch {
	case errors.Is(err, errAborted), errors.Is(err, errBreakerOpen):
		return true
	case errors.Is(err, kv.ErrInvalidKey), errors.Is(err, kv.ErrInvalidValue),
		errors.Is(err, kv.ErrInvalidTTL), errors.Is(err, kv.ErrInvalidLimit),
		errors.Is(err, kv.ErrInvalidPrefix), errors.Is(err, kv.ErrInvalidCursor),
		errors.Is(err, kv.ErrTooLarge): // a bulk read asked too much at once
		return true
	}
	return false
}

// onStateChange runs under gobreaker's mutex: it only stores and sends
// without blocking; the Store's event goroutine does the rest.
func (b *breaker) onStateChange(_ string, from, to gobreaker.State) {
	if to == gobreaker.StateOpen {
		b.openUntil.Store(tripping)
	}
	select {
	case b.events <- BreakerEvent{Role: b.role, From: stateOf(from), To: stateOf(to)}:
	default:
		b.lost.Add(1)
	}
	if to == gobreaker.StateClosed {
		select {
		case b.closed <- struct{}{}:
		default:
		}
	}
}

func stateOf(s gobreaker.State) BreakerState {
	switch s {
	case gobreaker.StateOpen:
		return BreakerOpen
	case gobreaker.StateHalfOpen:
		return BreakerHalfOpen
	}
	return BreakerClosed
}

func (b *breaker) isOpen(now time.Time) bool {
	u := b.openUntil.Load()
	return u != 0 && now.UnixNano() < u
}

// pass is an operation the breaker let run; its done reports the outcome.
// A value, not a closure, so that asking costs no allocation beyond
// gobreaker's own. The zero pass's done does nothing.
type pass struct {
	b      *breaker
	report func(error)
}

// done reports the operation's error to the breaker.
func (p pass) done(err error) {
	if p.report == nil {
		return
	}
	p.report(err)
	p.b.settle()
}

// allow asks whether an operation may run. When it may, the pass's done
// must be called with the operation's error.
func (b *breaker) allow(now time.Time) (pass, error) {
	if b.isOpen(now) {
		return pass{}, b.refusal(now)
	}
	report, err := b.cb.Allow()
	if err != nil {
		return pass{}, b.refusal(now)
	}
	if b.isOpen(now) {
		// Another operation tripped the breaker between the check and
		// Allow: this one must not become a probe.
		report(errBreakerOpen)
		return pass{}, b.refusal(now)
	}
	return pass{b: b, report: report}, nil
}

// settle times the open period of a breaker that has just tripped. It runs
// after gobreaker has released its mutex, in the goroutine whose operation
// tripped it, before that goroutine does anything else.
func (b *breaker) settle() {
	if b.openUntil.Load() == tripping {
		b.openUntil.CompareAndSwap(tripping, b.clock.Now().Add(b.openFor).UnixNano())
	}
}

func (b *breaker) refusal(now time.Time) error {
	wait := time.Duration(0)
	if u := b.openUntil.Load(); u != tripping && u > now.UnixNano() {
		wait = time.Duration(u - now.UnixNano())
	}
	return kv.Unavailable(b.role.String(), wait, errBreakerOpen)
}

// state reports the breaker's state as the Store applies it.
func (b *breaker) state(now time.Time) BreakerState {
	if b.isOpen(now) {
		return BreakerOpen
	}
	return stateOf(b.cb.State())
}
