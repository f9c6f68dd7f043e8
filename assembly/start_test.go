package assembly

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// downBoard is a control board that, once down, fails every call, and,
// once hung as well, answers none: a call returns when its ctx ends, as a
// driver's call waits out its server selection. It counts the calls that
// ended by a deadline further than closeWait from their start.
type downBoard struct {
	*control.MemoryBoard
	mu                   sync.Mutex
	down, hung           bool
	calls, waitedTooLong int
}

func (b *downBoard) refuse(ctx context.Context) error {
	b.mu.Lock()
	down, hung := b.down, b.hung
	b.mu.Unlock()
	if !down {
		return nil
	}
	if hung {
		at, _ := ctx.Deadline()
		long := time.Until(at) > closeWait
		<-ctx.Done()
		b.mu.Lock()
		b.calls++
		if long && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			b.waitedTooLong++
		}
		b.mu.Unlock()
	}
	return control.ErrBoard
}

func (b *downBoard) Load(ctx context.Context) (control.Document, error) {
	if err := b.refuse(ctx); err != nil {
		return control.Document{}, err
	}
	return b.MemoryBoard.Load(ctx)
}

func (b *downBoard) Beat(ctx context.Context, h control.Heartbeat) error {
	if err := b.refuse(ctx); err != nil {
		return err
	}
	return b.MemoryBoard.Beat(ctx, h)
}

func (b *downBoard) Instances(ctx context.Context) ([]control.Heartbeat, error) {
	if err := b.refuse(ctx); err != nil {
		return nil, err
	}
	return b.MemoryBoard.Instances(ctx)
}

func (b *downBoard) Forget(ctx context.Context, instance string) error {
	if err := b.refuse(ctx); err != nil {
		return err
	}
	return b.MemoryBoard.Forget(ctx, instance)
}

// Once the board has not answered, the end (Drain, Leave, Close) waits on
// none of its calls longer than closeWait, however long the caller's ctx:
// not the board's timeout, not the driver's server selection (5 s by
// default). The board, hung, counts the calls that waited longer: none.
func TestTheEndWaitsNoLongerThanItsBoundOnABoardDown(t *testing.T) {
	board := &downBoard{MemoryBoard: control.NewMemoryBoard()}
	b := &Backends{Sides: []Sides{{ID: "ns", Primary: memory.New(memory.Config{}), Shadow: memory.New(memory.Config{})}}, Board: board}
	a, err := Start(t.Context(), Config{Who: Who{Name: "test", Self: "bot"}, Backends: b, Instance: "bot",
		Store: dualwrite.Config{Stage: dualwrite.DualWrite, ConsistencyWindow: -1}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Follow(t.Context()); err != nil {
		t.Fatal(err)
	}
	board.mu.Lock()
	board.down = true
	board.mu.Unlock()
	a.Follower.Poll(t.Context()) // the board does not answer
	board.mu.Lock()
	board.hung = true
	board.mu.Unlock()
	ctx := context.Background()
	_ = a.Drain(ctx)
	_ = a.Leave(ctx)
	_ = a.Close(ctx)
	board.mu.Lock()
	defer board.mu.Unlock()
	if board.calls == 0 || board.waitedTooLong != 0 {
		t.Errorf("the end waited on %d calls to the board that did not answer, %d of them longer than %s", board.calls, board.waitedTooLong, closeWait)
	}
}
