package dualwrite

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

// PanicError is what a Store returns, or counts as a failed asynchronous
// operation, when a store it wraps panicked. The panic is recovered so that
// it can neither leave a key's lock held (blocking that key's writers, stage
// changes and Close forever) nor end the process from a lane's goroutine.
// It matches kv.ErrPanicked, and the panic value when that is an error.
type PanicError struct {
	// Role is the store that panicked.
	Role Role
	// Value is what it panicked with.
	Value any
	// Stack is the panicking goroutine's stack.
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("dualwrite: the %s store panicked: %v", e.Role, e.Value)
}

// Is makes a PanicError match kv.ErrPanicked.
func (e *PanicError) Is(target error) bool { return target == kv.ErrPanicked }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// recovered, deferred by every method that calls into a store, turns a
// panic of the store of role r into a *PanicError in *err. The first panic
// of each store is logged with its stack; the value is logged only when it
// is the runtime's own error (an index out of range...), since a store's
// panic value may quote the data it was given.
func (s *Store) recovered(r Role, err *error) {
	v := recover()
	if v == nil {
		return
	}
	pe := &PanicError{Role: r, Value: v, Stack: debug.Stack()}
	*err = pe
	s.logPanic("dualwrite: a store panicked; the panic was recovered and the call failed (later panics of this store are not logged)",
		r.String(), v, pe.Stack)
}

// deliver hands a divergence record to the Sink, which is the program's
// code: a panic there is logged once and the record dropped, as it must not
// end the lane's goroutine.
func (s *Store) deliver(ctx context.Context, rec compare.Record) {
	defer func() {
		if v := recover(); v != nil {
			s.logPanic("dualwrite: the divergence sink panicked; the record was dropped (later panics are not logged)",
				"sink", v, debug.Stack())
		}
	}()
	s.sink.Divergence(ctx, rec)
}

func (s *Store) logPanic(msg, who string, v any, stack []byte) {
	if _, seen := s.warned.LoadOrStore("panic:"+who, true); seen {
		return
	}
	what := slog.String("panic_type", fmt.Sprintf("%T", v))
	if re, ok := v.(runtime.Error); ok {
		what = slog.String("panic", re.Error())
	}
	s.log.LogAttrs(context.Background(), slog.LevelError, msg,
		slog.String("role", who), what, slog.String("stack", string(stack)))
}
