package dualwrite

import (
	"fmt"
	"strings"
	"time"
)

// FenceStatus says what holds the flip between Handover and Live back, in
// either direction, on this Store (package control adds the other
// instances). It holds only in those two stages.
type FenceStatus struct {
	// Stage is the Store's stage when the status was taken.
	Stage Stage
	// LastBindingCopy is when the latest credible copy of a binding write
	// arrived; zero when none arrived since New.
	LastBindingCopy time.Time
	// QuietUntil is, in Handover, when the fence interval after the Store
	// entered it ends (an isolate may still route a write by a stage it
	// read before); zero in Live.
	QuietUntil time.Time
	// IngestUnverified counts the keys whose last write came through
	// Ingest (or is unknown: loaded from the journal) and that no
	// verification has found equal in both stores yet.
	IngestUnverified int
	// Dirty and ReconciliationNeeded are Stats'.
	Dirty                int
	ReconciliationNeeded bool
	// Remaining estimates how long until the fence lets a flip go: the
	// quiet interval's end, or the consistency window after the latest
	// write of an unverified key, the full comparison's start; the time
	// until the next verification pass when only that pass or a repair can
	// clear it (zero while it is due), though a flip the fence refuses
	// asks for that pass at once. Zero when clear.
	Remaining time.Duration
	// HeldBy says, in words, what holds the flip back; empty when clear.
	HeldBy []string
	// In Handover with a fence: CompareFrom is when the full comparison
	// with Workers KV may start (see The handover); Compared whether it
	// finished clean for this handover, CompareDiffered how many keys it
	// found different (each held back until verified).
	CompareFrom     time.Time
	Compared        bool
	CompareDiffered int
}

// Clear reports whether nothing holds a flip back.
func (f FenceStatus) Clear() bool { return len(f.HeldBy) == 0 }

// Fence returns what holds the flip between Handover and Live back now.
func (s *Store) Fence() FenceStatus { return s.fenceAt(s.Stage(), s.clock.Now()) }

// fenceAt is the fence of a flip from stage from, at now. The lanes are not
// part of it: the flip drains them itself, and a heartbeat reports them.
func (s *Store) fenceAt(from Stage, now time.Time) FenceStatus {
	f := FenceStatus{Stage: from}
	f.Dirty, _, _, f.ReconciliationNeeded = s.set.snapshot()
	f.LastBindingCopy = timeOf(s.lastCopy.Load())
	if from != Handover && from != Live {
		return f
	}
	n, latest := s.set.ingestPending()
	f.IngestUnverified = n
	// A copy does not restart the interval: one that arrives after it is
	// refused (credible), so that no client holds the flip for longer
	// than the verification of what it sent.
	if s.cfg.fence > 0 && from == Handover {
		f.QuietUntil = time.Unix(0, s.stageSince.Load()).Add(s.cfg.fence)
	}
	if wait := f.QuietUntil.Sub(now); wait > 0 {
		what := "the stage began"
		if s.key.rewrote.Load() == s.stageSince.Load() {
			what = StageKey + " was written again"
		}
		f.HeldBy = append(f.HeldBy, fmt.Sprintf("%s %s ago: the fence waits %s more, so that no isolate still writes its binding",
			what, now.Sub(f.QuietUntil.Add(-s.cfg.fence)).Round(time.Second), wait.Round(time.Second)))
		f.Remaining = wait
	}
	if n > 0 {
		what := "last written by a binding copy or reloaded from the journal"
		if f.LastBindingCopy.IsZero() { // no copy came: a tee's, if any, before the restart
			what = "reloaded from the journal (their last writer unknown)"
		}
		f.HeldBy = append(f.HeldBy, fmt.Sprintf("%d keys %s are not verified against the primary yet", n, what))
		wait := latest.Add(s.cfg.window).Sub(now)
		if wait <= 0 {
			wait = s.untilPass(now)
		}
		f.Remaining = max(f.Remaining, wait)
	}
	if from == Handover {
		s.comparisonHold(&f, time.Unix(0, s.stageSince.Load()), now)
	}
	if k := s.key.status(); from == Handover && s.cfg.fence > 0 && (k.Found == "" || k.Holds()) {
		f.HeldBy = append(f.HeldBy, StageKey+" "+keyWords[k.Found]+": the flip waits until it reads back as written (a Workers KV read may lag a write by up to a minute), so that a tee cut off from the proxy refuses its binding")
		f.Remaining = max(f.Remaining, s.untilPass(now))
	}
	if f.Dirty > 0 || f.ReconciliationNeeded {
		f.HeldBy = append(f.HeldBy, fmt.Sprintf("%d dirty keys (reconciliation needed: %v)", f.Dirty, f.ReconciliationNeeded))
		f.Remaining = max(f.Remaining, s.untilPass(now))
	}
	return f
}

var keyWords = map[string]string{"": "is not read back yet", KeyMissing: "read back missing and was written again",
	KeyDifferent: "read back different and was written again", KeyUnreadable: "cannot be read back"}

// fenceError is the refusal of a flip that the fence holds back.
func fenceError(f FenceStatus, from, to Stage) error {
	return fmt.Errorf("%w: the flip from %s to %s waits: %s; stage stays %s", ErrUnsynced, from, to, strings.Join(f.HeldBy, "; "), from)
}
