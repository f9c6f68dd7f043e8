package dualwrite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
)

type traceKey struct{}

// laneParents are the parents an operation's context may have on a lane:
// value-free, and the Observer's, which carries values and no
// cancellation.
var laneParents = map[string]context.Context{
	"background": context.Background(),
	"values":     context.WithValue(context.Background(), traceKey{}, "trace-7"),
}

func newTestStore(t *testing.T) *Store {
	t.Helper()
	s, err := New(Config{Primary: memory.New(memory.Config{}), Shadow: memory.New(memory.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// The watchdog (or Close's abort) may take an operation's cancel func just
// before the operation ends and call it after the lane's next operation
// started: the next one runs under a context of its own, which that call
// does not cancel. An operation canceled while it runs sees its cause, the
// values of its parent, and returns the cause as today.
func TestLaneContextOutlivesALateCancel(t *testing.T) {
	for name, parent := range laneParents {
		t.Run(name, func(t *testing.T) {
			s := newTestStore(t)
			l := newLane(0) // not the watchdog's: the test plays it
			now := time.Now()
			var claimed context.CancelCauseFunc
			err := s.do(l, parent, now, 0, func(ctx context.Context) error {
				l.mu.Lock()
				claimed = l.claimLocked()
				l.mu.Unlock()
				return nil
			})
			if err != nil || claimed == nil {
				t.Fatalf("first operation: %v, claimed %v", err, claimed != nil)
			}
			err = s.do(l, parent, now, 0, func(ctx context.Context) error {
				claimed(errTimeout)
				if ctx.Value(traceKey{}) != parent.Value(traceKey{}) {
					t.Errorf("the operation's context lost its parent's values")
				}
				return ctx.Err()
			})
			if err != nil {
				t.Fatalf("the next operation was canceled by the late cancel: %v", err)
			}
			for _, cause := range []error{errTimeout, errAborted} {
				err = s.do(l, parent, now, 0, func(ctx context.Context) error {
					l.mu.Lock()
					c := l.claimLocked()
					l.mu.Unlock()
					c(cause)
					if v := ctx.Value(traceKey{}); v != parent.Value(traceKey{}) {
						t.Errorf("a canceled operation's context lost its parent's values: %v", v)
					}
					return ctx.Err()
				})
				if err != cause {
					t.Fatalf("an operation canceled with %v returned %v", cause, err)
				}
			}
			// A context derived from the operation's by the store is
			// canceled with it.
			err = s.do(l, parent, now, 0, func(ctx context.Context) error {
				child, cancel := context.WithCancel(ctx)
				defer cancel()
				l.mu.Lock()
				c := l.claimLocked()
				l.mu.Unlock()
				c(errTimeout)
				<-child.Done()
				return child.Err()
			})
			if !errors.Is(err, errTimeout) {
				t.Fatalf("an operation whose derived context was canceled returned %v", err)
			}
		})
	}
}

// A cancelable parent (a verification pass's) still cancels its
// operation.
func TestLaneOperationSeesItsParentsCancellation(t *testing.T) {
	s := newTestStore(t)
	l := newLane(0)
	parent, cancel := context.WithCancel(context.Background())
	err := s.do(l, parent, time.Now(), 0, func(ctx context.Context) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("an operation whose parent was canceled returned %v", err)
	}
	if err := s.do(l, context.Background(), time.Now(), 0, func(ctx context.Context) error { return ctx.Err() }); err != nil {
		t.Fatalf("the lane's next operation: %v", err)
	}
}
