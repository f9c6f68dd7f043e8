package dualwrite

import (
	"context"
	"log/slog"
	"time"

	"github.com/kvshadow/kvshadow/compare"
)

// Observer watches the Store's asynchronous side (package dualwriteotel
// implements it). Methods are called outside every lock of the Store; those
// marked "caller's path" must return quickly, the others run on a lane's
// worker (a slow observer slows that lane) or the goroutine named. Embed
// NopObserver to implement only some methods.
type Observer interface {
	// AsyncContext returns the context of an asynchronous operation made for
	// caller, when a lane's worker starts it, without caller's cancellation
	// (the operation outlives the call). Each context it returns is passed to
	// exactly one OpDone; a repair's caller is context.Background().
	AsyncContext(caller context.Context, op Op) context.Context
	// OpDone reports an asynchronous operation that ran.
	OpDone(ctx context.Context, e OpEvent)
	// Dropped reports a write whose copy did not reach the other store, or
	// a comparison not made, with the caller's context (caller's path when
	// the lane was full or the breaker open at once; a worker otherwise,
	// after the OpDone of a copy that failed).
	Dropped(ctx context.Context, e DropEvent)
	// Compared reports a classified read comparison, before the OpDone of
	// the same operation.
	Compared(ctx context.Context, e CompareEvent)
	// Repaired reports the outcome of one dirty key's repair, before the
	// OpDone of the same operation.
	Repaired(ctx context.Context, e RepairEvent)
	// Verified reports the verification of one unsettled key after the
	// consistency window, from the verification pass's goroutine (or
	// Settle's caller).
	Verified(ctx context.Context, e VerifyEvent)
	// BreakerChanged reports a state change of a store's breaker, from the
	// Store's own event goroutine.
	BreakerChanged(e BreakerEvent)
	// StageChanged reports a stage change, from SetStage's goroutine.
	StageChanged(e StageEvent)
}

// Op names an asynchronous operation.
type Op string

// The asynchronous operations.
const (
	OpPut     Op = "put"
	OpDelete  Op = "delete"
	OpCompare Op = "compare" // the read of the other store for a comparison
	OpRepair  Op = "repair"  // re-copying a dirty key
	OpVerify  Op = "verify"  // reading both stores to settle a key
)

// Outcome is how an asynchronous operation ended.
type Outcome string

// The outcomes of OpEvent.
const (
	OutcomeOK      Outcome = "ok"
	OutcomeError   Outcome = "error"
	OutcomeTimeout Outcome = "timeout"
)

// OpEvent describes an asynchronous operation that ran.
type OpEvent struct {
	Op Op
	// Role is the store the operation wrote or read.
	Role     Role
	Outcome  Outcome
	Duration time.Duration
	// Waited is the time the operation spent queued in its lane, on the
	// Store's clock: it grows when the other store is slower than the writes,
	// before the lane fills and drops.
	Waited time.Duration
	// ErrorClass is compare.ErrorClass of the error, without its text.
	ErrorClass string
}

// DropReason says why a write did not reach the other store.
type DropReason string

// The drop reasons, as Stats and metrics name them.
const (
	DropLaneFull    DropReason = "lane_full"
	DropBreakerOpen DropReason = "breaker_open"
	DropTimeout     DropReason = "timeout"
	DropShadowError DropReason = "shadow_error"
	// DropClosed: the Store closed before the operation could run.
	DropClosed DropReason = "closed"
)

// DropReasons lists every reason in a stable order.
var DropReasons = [...]DropReason{DropLaneFull, DropBreakerOpen, DropTimeout, DropShadowError, DropClosed}

// DropEvent describes an operation that did not complete. For writes and
// repairs the key has been marked dirty; a dropped comparison is only
// skipped.
type DropEvent struct {
	Op     Op
	Role   Role
	Reason DropReason
}

// CompareEvent describes a classified comparison.
type CompareEvent struct {
	Kind compare.Kind
	// Namespace is the key's module (kv.ModuleOf), never the key.
	Namespace string
}

// RepairOutcome is how the repair of one dirty key ended.
type RepairOutcome string

// The repair outcomes.
const (
	// RepairCopied: the authoritative value was copied to the other store.
	RepairCopied RepairOutcome = "copied"
	// RepairDeleted: the key is missing at the authoritative store and was
	// deleted from the other.
	RepairDeleted RepairOutcome = "deleted"
	// RepairDeferred: the key was written too recently, the difference
	// found has not yet held for a window (the confirmation rule), or its
	// lane was full or the breaker open; it stays dirty for a later pass.
	RepairDeferred RepairOutcome = "deferred"
	// RepairFailed: a read or write failed; the key stays dirty.
	RepairFailed RepairOutcome = "failed"
	// RepairUnneeded: both stores were found equal; nothing was written
	// and the key settled.
	RepairUnneeded RepairOutcome = "unneeded"
	// RepairHeld: the repair would delete the key from the other store and
	// waits (see Repairs never delete in bulk); the key stays dirty.
	RepairHeld RepairOutcome = "held"
)

// RepairOutcomes lists every outcome in a stable order.
var RepairOutcomes = [...]RepairOutcome{RepairCopied, RepairDeleted, RepairDeferred, RepairFailed, RepairUnneeded, RepairHeld}

// RepairEvent describes one key's repair.
type RepairEvent struct {
	Outcome   RepairOutcome
	Namespace string
}

// VerifyEvent describes the verification of one key.
type VerifyEvent struct {
	// Kind is the classification: Match (the key settled), Suspected (a
	// first difference, to be verified again), a divergent kind (a
	// difference confirmed, reported to the Sink and repaired), or a kind
	// that could not conclude (errors, Inconclusive, ExpiredOnOneSide).
	Kind compare.Kind
	// Namespace is the key's module (kv.ModuleOf), never the key.
	Namespace string
	// Suspected reports that the key was suspected before this read.
	Suspected bool
}

// BreakerState is a breaker's state.
type BreakerState string

// The breaker states.
const (
	BreakerClosed   BreakerState = "closed"
	BreakerHalfOpen BreakerState = "half-open"
	BreakerOpen     BreakerState = "open"
)

// BreakerEvent describes a state change of the breaker guarding Role.
type BreakerEvent struct {
	Role     Role
	From, To BreakerState
}

// StageEvent describes a stage change.
type StageEvent struct{ From, To Stage }

// NopObserver ignores every event; its AsyncContext is
// context.WithoutCancel. Embed it to implement part of Observer.
type NopObserver struct{}

var _ Observer = NopObserver{}

// AsyncContext returns context.WithoutCancel(caller): values such as the
// trace context survive, cancellation does not. A caller's context that
// cannot be canceled is returned as it is.
func (NopObserver) AsyncContext(caller context.Context, _ Op) context.Context {
	if caller.Done() == nil {
		return caller
	}
	return context.WithoutCancel(caller)
}
func (NopObserver) OpDone(context.Context, OpEvent)        {}
func (NopObserver) Dropped(context.Context, DropEvent)     {}
func (NopObserver) Compared(context.Context, CompareEvent) {}
func (NopObserver) Repaired(context.Context, RepairEvent)  {}
func (NopObserver) Verified(context.Context, VerifyEvent)  {}
func (NopObserver) BreakerChanged(BreakerEvent)            {}
func (NopObserver) StageChanged(StageEvent)                {}

// Sink receives the divergences verification confirms (see Confirmation),
// redacted, never with values, outside every lock.
type Sink interface {
	Divergence(ctx context.Context, rec compare.Record)
}

// LogSink is the default Sink: one warning per divergence.
type LogSink struct{ Logger *slog.Logger }

// Divergence implements Sink.
func (l LogSink) Divergence(ctx context.Context, rec compare.Record) {
	l.Logger.LogAttrs(ctx, slog.LevelWarn, "dualwrite: divergence",
		slog.String("kind", string(rec.Kind)),
		slog.String("namespace", rec.Namespace),
		slog.String("key", rec.Key),
		digestAttr("primary", rec.Primary),
		digestAttr("shadow", rec.Shadow),
		slog.String("error", rec.Error))
}

func digestAttr(name string, d compare.Digest) slog.Attr {
	if !d.Present {
		return slog.Group(name, slog.Bool("present", false))
	}
	attrs := []any{slog.Bool("present", true), slog.Int("length", d.Length), slog.String("hash", d.Hash)}
	if !d.Expiration.IsZero() {
		attrs = append(attrs, slog.Time("expiration", d.Expiration))
	}
	return slog.Group(name, attrs...)
}
