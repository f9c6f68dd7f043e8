package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// Change is the outcome of SetStage.
type Change struct {
	Document Document // after the call
	Changed  bool     // false when the Document already had the stage
	// Applied reports whether this instance runs Document now; when it
	// does not, Lag says why and it retries at every poll.
	Applied bool
	Lag     string
}

// SetStage changes the Document's stage under the package doc's rules and
// applies it to this instance at once. A refusal matches
// dualwrite.ErrStageTransition, ErrNotDrained and dualwrite.ErrUnsynced,
// or ErrConflict (the Change then holds the winner's Document).
func (f *Follower) SetStage(ctx context.Context, to dualwrite.Stage) (Change, error) {
	doc, err := f.load(ctx)
	if err != nil {
		return Change{}, err
	}
	if doc.Stage == to && doc.Generation > 0 {
		f.Poll(ctx)
		st := f.Status()
		return Change{Document: doc, Applied: st.InSync(), Lag: st.Lag}, nil
	}
	if err := dualwrite.CheckTransition(doc.Stage, to); err != nil {
		return Change{Document: doc}, err
	}
	if dualwrite.IsFlip(doc.Stage, to) {
		if err := f.flipAllowed(ctx, doc); err != nil {
			return Change{Document: doc}, err
		}
	}
	next := Document{Stage: to, Generation: doc.Generation + 1, UpdatedAt: f.clock.Now(), UpdatedBy: f.cfg.Instance, Pairing: doc.Pairing}
	if err := f.swap(ctx, doc.Generation, next); err != nil {
		if errors.Is(err, ErrConflict) {
			f.Poll(ctx)
			if won, lerr := f.load(ctx); lerr == nil {
				doc = won
			}
		}
		return Change{Document: doc}, err
	}
	applyErr := f.apply(ctx, next)
	f.beat(ctx)
	c := Change{Document: next, Changed: true, Applied: applyErr == nil}
	if applyErr != nil {
		c.Lag = f.Status().Lag
	}
	return c, nil
}

// FlipChecker is the optional ability of a Target to check afresh, before
// a flip between handover and live, what it otherwise checks now and then
// (dualwrite.Store.VerifyStageKey).
type FlipChecker interface {
	CheckBeforeFlip(ctx context.Context)
}

// flipAllowed checks every instance on the Board, and this one afresh.
func (f *Follower) flipAllowed(ctx context.Context, doc Document) error {
	if c, ok := f.cfg.Target.(FlipChecker); ok {
		c.CheckBeforeFlip(ctx)
	}
	h, err := f.hold(ctx, doc)
	if err != nil {
		return err
	}
	return h.err()
}

func (f *Follower) hold(ctx context.Context, doc Document) (Hold, error) {
	bctx, cancel := context.WithTimeout(ctx, f.cfg.BoardTimeout)
	beats, err := f.cfg.Board.Instances(bctx)
	cancel()
	if f.boardDone(err) != nil {
		return Hold{}, err
	}
	self := f.report(ctx)
	if self.Lag != "" {
		return Hold{}, fmt.Errorf("%w: this instance does not run generation %d yet: %s", ErrNotDrained, doc.Generation, self.Lag)
	}
	return blockers(beats, self, doc.Generation, f.clock.Now(), f.cfg.LiveFor), nil
}

// Instances returns the heartbeats on the Board, and for each whether it
// counts as live now.
func (f *Follower) Instances(ctx context.Context) ([]InstanceView, error) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.BoardTimeout)
	defer cancel()
	beats, err := f.cfg.Board.Instances(ctx)
	if f.boardDone(err) != nil {
		return nil, err
	}
	now := f.clock.Now()
	out := make([]InstanceView, len(beats))
	for i, h := range beats {
		out[i] = InstanceView{Heartbeat: h, Live: !h.Stopped && now.Sub(h.At) < f.cfg.LiveFor, Age: now.Sub(h.At)}
	}
	return out, nil
}

// InstanceView is a heartbeat as seen now.
type InstanceView struct {
	Heartbeat
	Live bool
	Age  time.Duration
}

// Forget removes an instance's heartbeat from the Board, once the keys it
// left are reconciled (this instance's own comes back at its next beat).
func (f *Follower) Forget(ctx context.Context, instance string) error {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.BoardTimeout)
	defer cancel()
	return f.boardDone(f.cfg.Board.Forget(ctx, instance))
}
