// Package ledgertest is the conformance suite of control.Board's stage
// changes under races: control's tests run it on the memory board,
// tests/proxy on MongoBoard over an embedded FerretDB (and any MongoDB at
// MONGODB_URI).
package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// Swaps checks a Board's stage changes under races: of n Swaps of one
// generation at once, round after round, exactly one is taken, the others
// fail with ErrConflict naming the winner, and Load reads the winner's
// Document.
func Swaps(t *testing.T, b control.Board, n, rounds int) {
	ctx := context.Background()
	if err := b.Swap(ctx, 0, control.Document{Stage: dualwrite.DualWrite, Generation: 1, UpdatedAt: time.Now(), UpdatedBy: "first"}); err != nil {
		t.Fatal(err)
	}
	for round := range rounds {
		doc, err := b.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			next := control.Document{Stage: dualwrite.Stages[i%len(dualwrite.Stages)], Generation: doc.Generation + 1,
				UpdatedAt: time.Now(), UpdatedBy: fmt.Sprintf("swapper-%d", i)}
			wg.Go(func() { errs[i] = b.Swap(ctx, doc.Generation, next) })
		}
		wg.Wait()
		won, err := b.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var winners []int
		for i, err := range errs {
			switch {
			case err == nil:
				winners = append(winners, i)
			case !errors.Is(err, control.ErrConflict):
				t.Fatalf("round %d: swapper %d: %v, want ErrConflict", round, i, err)
			case !strings.Contains(err.Error(), won.UpdatedBy):
				t.Errorf("round %d: swapper %d's refusal names no winner (%s): %v", round, i, won.UpdatedBy, err)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d swaps of generation %d taken (%v), want exactly one", round, len(winners), doc.Generation+1, winners)
		}
		if want := fmt.Sprintf("swapper-%d", winners[0]); won.Generation != doc.Generation+1 || won.UpdatedBy != want {
			t.Fatalf("round %d: the document is generation %d by %s, want %d by %s", round, won.Generation, won.UpdatedBy, doc.Generation+1, want)
		}
	}
}

// SetStages checks Followers over one Board changing the stage at once,
// round after round: exactly one change per generation, every loser told
// ErrConflict with the winner's Document, and every instance, winner and
// losers, runs the Document's stage once it has polled.
func SetStages(t *testing.T, b control.Board, n, rounds int) {
	ctx := context.Background()
	targets := make([]*target, n)
	followers := make([]*control.Follower, n)
	for i := range n {
		targets[i] = &target{}
		f, err := control.NewFollower(control.Config{Board: b, Target: targets[i], Instance: fmt.Sprintf("instance-%d", i),
			Initial: dualwrite.DualWrite, PollInterval: time.Hour, HeartbeatInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.Close)
		followers[i] = f
	}
	for round := range rounds {
		doc, err := b.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// From dualwrite, off and shadow are each one step; from either,
		// dualwrite is the one step back.
		tos := []dualwrite.Stage{dualwrite.Off, dualwrite.Shadow}
		if doc.Stage != dualwrite.DualWrite {
			tos = []dualwrite.Stage{dualwrite.DualWrite}
		}
		changes := make([]control.Change, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i, f := range followers {
			wg.Go(func() { changes[i], errs[i] = f.SetStage(ctx, tos[i%len(tos)]) })
		}
		wg.Wait()
		now, err := b.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		changed := 0
		for i, err := range errs {
			c := changes[i]
			switch {
			case err == nil && c.Changed:
				changed++
			case err == nil, errors.Is(err, dualwrite.ErrStageTransition):
				// It read the winner's document: its stage was that one
				// already, or is no step from it.
			case !errors.Is(err, control.ErrConflict):
				t.Fatalf("round %d: instance %d: %v", round, i, err)
			}
			if d := c.Document; d.Generation != now.Generation || d.Stage != now.Stage || d.UpdatedBy != now.UpdatedBy {
				t.Errorf("round %d: instance %d was told %+v, the document is %+v", round, i, c.Document, now)
			}
		}
		if changed != 1 || now.Generation != doc.Generation+1 {
			t.Fatalf("round %d: %d instances told they changed generation %d, now %d; want exactly one", round, changed, doc.Generation, now.Generation)
		}
		// A loser that read the winner's document before its own change
		// follows at its next poll; the generation it runs is then the
		// document's, and so must its stage be.
		for _, f := range followers {
			f.Poll(ctx)
		}
		for i, tg := range targets {
			if st := tg.stage(); st != now.Stage {
				t.Fatalf("round %d: instance %d runs %s, the document says %s at generation %d", round, i, st, now.Stage, now.Generation)
			}
		}
	}
}

// target is a control.Target that runs whatever stage it is given, always
// drained and clean.
type target struct {
	mu sync.Mutex
	st dualwrite.Stage
}

func (g *target) Apply(_ context.Context, s dualwrite.Stage) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.st = s
	return nil
}

func (g *target) Report(context.Context) control.Heartbeat { return control.Heartbeat{Drained: true} }

func (g *target) stage() dualwrite.Stage {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.st
}
