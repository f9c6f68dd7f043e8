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

var errBreakerOpen = errors.New("dualwrite: circuit breaker open")

// tripping marks a breaker that has just opened and whose open period has
// not been timed yet: it counts as open.
const tripping = math.MaxInt64

// breaker wraps gobreaker's breaker. gobreaker counts failures and
// runs the half-open probes; the open period is timed here, on the Store's
// clock, because gobreaker reads the wall clock: gobreaker's own Timeout is
// a nanosecond, and while openUntil lies ahead nothing reaches gobreaker.
type breaker struct {
	role    Role
	cb      *gobreaker.CircuitBreaker[struct{}]
	clock   clock.Clock
	openFor time.Duration
	// openUntil is the end of the open period in unix ns; 0 when the
	// breaker never opened, tripping while its period is being set.
	openUntil atomic.Int64

	// quiet is the fast path's word. Bit 0 is set while gobreaker is
	// closed and has counted no failure since its last success: a success
	// would then change nothing gobreaker decides on, so it skips
	// gobreaker (its mutex and two readings of the wall clock) altogether.
	// The bits above count the failures reported, each after gobreaker
	// has counted it, so that a success cannot set bit 0 over a failure
	// counted after it read the word (see calm).
	quiet atomic.Uint64

	events chan<- BreakerEvent
	lost   *atomic.Uint64
	closed chan<- struct{} // signalled when the breaker closes: repair now
}

func newBreaker(role Role, cfg BreakerConfig, clk clock.Clock, events chan<- BreakerEvent, lost *atomic.Uint64, closed chan<- struct{}) *breaker {
	b := &breaker{role: role, clock: clk, openFor: cfg.OpenTimeout, events: events, lost: lost, closed: closed}
	b.quiet.Store(1)
	failures := uint32(cfg.FailuresToOpen)
	b.cb = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:          role.String(),
		MaxRequests:   uint32(cfg.HalfOpenRequests),
		Interval:      cfg.CountInterval,
		Timeout:       time.Nanosecond,
		ReadyToTrip:   func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		IsSuccessful:  successful,
		IsExcluded:    excluded,
		OnStateChange: b.onStateChange,
	})
	return b
}

// successful tells the operations that say the store is well: those that
// succeeded, and reads of a key it does not hold.
func successful(err error) bool { return err == nil || errors.Is(err, kv.ErrNotFound) }

// excluded lists the errors that say nothing of the store's health: inputs
// the store refused (the primary accepted them, so they are a mismatch of
// rules, not an outage), operations abandoned at Close, and those the
// breaker itself turned away.
func excluded(err error) bool {
	switch {
	case err == nil: // most operations: spare them the chain below
		return false
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
		kick(b.closed)
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

// run runs op if the breaker lets it and reports op's error to the
// breaker. ran is false when the breaker refused: err is then the refusal
// and op did not run.
//
// While quiet, op runs without gobreaker and only a failure is reported
// to it, in the closed breaker it finds (none when no longer closed),
// where gobreaker would discard an outcome admitted before a trip or a
// CountInterval cleared its counts: at most the failures in flight at a
// CountInterval's turn count towards the next, so the breaker opens no
// later than gobreaker alone would. Otherwise Execute admits and counts
// op, its func on the stack (Allow's closure allocated on every call).
func (b *breaker) run(now time.Time, op func() error) (ran bool, err error) {
	if b.isOpen(now) {
		return false, b.refusal(now)
	}
	w := b.quiet.Load()
	if w&1 == 1 {
		err = op()
		if !successful(err) && !excluded(err) {
			b.fail(err)
		}
		return true, err
	}
	_, err = b.cb.Execute(func() (struct{}, error) {
		if b.isOpen(now) {
			// Another operation tripped the breaker between the check
			// above and gobreaker's admission: this one must not become
			// a probe. errBreakerOpen is excluded, so gobreaker counts
			// nothing for it.
			return struct{}{}, errBreakerOpen
		}
		ran = true
		return struct{}{}, op()
	})
	b.settle()
	switch {
	case !ran:
		return false, b.refusal(now)
	case successful(err):
		b.calm(w, b.clean())
	case !excluded(err):
		b.failed()
	}
	return true, err
}

// fail reports to gobreaker a failure of an operation that ran on the fast
// path, if the breaker is still closed (see run).
func (b *breaker) fail(err error) {
	if b.cb.State() == gobreaker.StateClosed {
		_, _ = b.cb.Execute(func() (struct{}, error) { return struct{}{}, err })
		b.settle()
	}
	b.failed()
}

// failed clears the quiet bit and counts one more failure, once gobreaker
// has counted it.
func (b *breaker) failed() {
	for {
		w := b.quiet.Load()
		if b.quiet.CompareAndSwap(w, (w|1)+1) {
			return
		}
	}
}

// calm sets the quiet bit after a success that gobreaker counted, when
// gobreaker was then clean (see clean) and no failure has been reported
// since w was read, before the success was asked for. A failure counted
// after that reading either has been reported, and the word is no longer
// w, or will be, and clears the bit again.
func (b *breaker) calm(w uint64, clean bool) {
	if clean {
		b.quiet.CompareAndSwap(w, w|1)
	}
}

func (b *breaker) clean() bool {
	return b.cb.State() == gobreaker.StateClosed && b.cb.Counts().ConsecutiveFailures == 0
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
