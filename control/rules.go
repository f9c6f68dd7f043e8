package control

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// unsyncedError lists the instances that keep a flip from happening.
type unsyncedError struct{ reasons []string }

func (e *unsyncedError) Error() string {
	return "control: the flip waits for " + strings.Join(e.reasons, "; ")
}

func (e *unsyncedError) Is(target error) bool {
	return target == ErrNotDrained || target == dualwrite.ErrUnsynced
}

// Hold is what keeps the flip between handover and live from happening
// across the fleet.
type Hold struct {
	// From (the Document's stage) and To are the flip asked about.
	From, To dualwrite.Stage
	// HeldBy says, per instance, what holds the flip back.
	HeldBy []string
	// Remaining is the longest dualwrite.FenceStatus.Remaining reported;
	// 0 when only a repair or an operator can clear what holds it.
	Remaining time.Duration
}

// blockers says, for each heartbeat that keeps a flip from happening, why.
// self is the calling instance, checked by its fresh report instead.
func blockers(beats []Heartbeat, self Heartbeat, generation uint64, now time.Time, liveFor time.Duration) Hold {
	var hold Hold
	check := func(h Heartbeat, live bool) {
		var why []string
		if h.Dirty > 0 || (!live && h.Unsettled > 0) {
			why = append(why, fmt.Sprintf("%d dirty and %d unsettled keys", h.Dirty, h.Unsettled))
		}
		if h.ReconciliationNeeded {
			why = append(why, "a full reconciliation is needed")
		}
		if live && !h.Drained {
			why = append(why, "lanes not drained")
		}
		if live && h.Generation != generation {
			why = append(why, fmt.Sprintf("runs generation %d, not %d", h.Generation, generation))
		}
		if wait := h.QuietUntil.Sub(now); wait > 0 {
			why = append(why, fmt.Sprintf("the fence waits %s more for binding copies", wait.Round(time.Second)))
			hold.Remaining = max(hold.Remaining, wait)
		}
		left := max(h.FenceRemaining-now.Sub(h.At), 0) // the estimate was At's
		if h.ComparePending {
			why = append(why, "its full comparison with Workers KV has not finished")
			hold.Remaining = max(hold.Remaining, left)
		}
		if h.StageKey != "" {
			why = append(why, dualwrite.StageKey+" read back "+h.StageKey+" from Workers KV (written again; the flip waits until it reads back as written)")
			hold.Remaining = max(hold.Remaining, h.FenceRemaining)
		}
		if h.IngestUnverified > 0 {
			why = append(why, fmt.Sprintf("%d keys last written by a binding copy or reloaded from the journal, not verified yet", h.IngestUnverified))
			hold.Remaining = max(hold.Remaining, left)
		}
		if !live && !h.Stopped {
			// It did not leave: it may still serve, cut off (package doc).
			why = append(why, "it stopped reporting without leaving, and may still serve without the control board, writing Workers KV alone")
		}
		if len(why) == 0 {
			return
		}
		state := "alive" // its heartbeat is fresh: not the stage live
		switch {
		case h.Stopped:
			state = "stopped; restart it on its journal, or reconcile and forget it"
		case !live:
			state = fmt.Sprintf("silent for %s; mend its way to MongoDB or restart it on its journal, or, if it is gone for good, reconcile and forget it", now.Sub(h.At).Round(time.Second))
		}
		hold.HeldBy = append(hold.HeldBy, fmt.Sprintf("instance %q (%s): %s", h.Instance, state, strings.Join(why, ", ")))
	}
	check(self, true)
	for _, h := range beats {
		if h.Instance == self.Instance {
			continue
		}
		check(h, !h.Stopped && now.Sub(h.At) < liveFor)
	}
	return hold
}

func (h Hold) err() error {
	if len(h.HeldBy) > 0 {
		return &unsyncedError{reasons: h.HeldBy}
	}
	return nil
}

// FlipHold returns what holds back the flip from the Document's stage
// (handover or live; ok is false in the other stages).
func (f *Follower) FlipHold(ctx context.Context) (hold Hold, ok bool, err error) {
	doc, err := f.load(ctx)
	if err != nil {
		return Hold{}, false, err
	}
	to := dualwrite.Live
	switch doc.Stage {
	case dualwrite.Handover:
	case dualwrite.Live:
		to = dualwrite.Handover
	default:
		return Hold{}, false, nil
	}
	hold, err = f.hold(ctx, doc)
	hold.From, hold.To = doc.Stage, to
	return hold, true, err
}
