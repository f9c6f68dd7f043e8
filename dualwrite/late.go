package dualwrite

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

// IngestRefusal says why an ingested copy was not trusted (doc.go, The
// clocks and Forged copies).
type IngestRefusal string

// The refusals, as Stats.IngestRefused counts them.
const (
	// RefusedAckedPast: acknowledged more than IngestMaxAge before it
	// arrived: a replay, or a clock far behind.
	RefusedAckedPast IngestRefusal = "acked_at_past"
	// RefusedAckedFuture: acknowledged more than IngestMaxLead after it
	// arrived: a clock ahead, or a forgery.
	RefusedAckedFuture IngestRefusal = "acked_at_future"
	// RefusedAckedAfterFlip: arrived more than a fence interval after
	// MongoDB became authoritative, whatever time its client says.
	RefusedAckedAfterFlip IngestRefusal = "acked_after_flip"
	// RefusedAfterFence: arrived in Handover more than a fence interval
	// after the Store entered it; its key is not recorded either.
	RefusedAfterFence IngestRefusal = "after_fence"
)

// IngestRefusals lists every IngestRefusal.
var IngestRefusals = [...]IngestRefusal{RefusedAckedPast, RefusedAckedFuture, RefusedAckedAfterFlip, RefusedAfterFence}

// LateOutcome is what became of a late copy: an ingested write that
// arrived while MongoDB (the shadow) was authoritative.
type LateOutcome string

// The outcomes, as Stats.LateCopies counts them.
const (
	// LateApplied: Workers KV showed the copy was the last acknowledged
	// write of its key: it was written to the authoritative store, and
	// copied to the other.
	LateApplied LateOutcome = "applied"
	// LateSuperseded: the Store wrote the key after the copy's write; the
	// newer value stands, and verification brings Workers KV level.
	LateSuperseded LateOutcome = "superseded"
	// LateConflict: Workers KV does not show the copy as the last write;
	// the authoritative value stands (doc.go, Late copies).
	LateConflict LateOutcome = "conflict"
	// LateFailed: the copy was the last write, but the authoritative
	// store failed to take it; its key is left for repair.
	LateFailed LateOutcome = "failed"
	// LateHeld: the authoritative store holds exactly what the copy says.
	LateHeld LateOutcome = "held"
)

// LateOutcomes lists every LateOutcome.
var LateOutcomes = [...]LateOutcome{LateApplied, LateSuperseded, LateConflict, LateFailed, LateHeld}

// trustAcked bounds an ingested write's acknowledged-at time by its
// arrival at now (doc.go, The clocks); one after now is taken as now.
func (s *Store) trustAcked(at, now time.Time) (time.Time, IngestRefusal) {
	switch {
	case at.IsZero():
		return now, ""
	case at.Before(now.Add(-s.cfg.IngestMaxAge)):
		return time.Time{}, RefusedAckedPast
	case at.After(now.Add(s.cfg.IngestMaxLead)):
		return time.Time{}, RefusedAckedFuture
	case at.After(now):
		return now, ""
	}
	return at, ""
}

// credible refuses a copy that arrives at now, in stage st, a fence
// interval (the longest an isolate trusts a stage it read, its invocation
// included) after the Store entered Handover or MongoDB became
// authoritative (doc.go, Forged copies).
func (s *Store) credible(st Stage, now time.Time) IngestRefusal {
	if s.cfg.fence <= 0 {
		return ""
	}
	if st == Handover && now.After(time.Unix(0, s.stageSince.Load()).Add(s.cfg.fence)) {
		return RefusedAfterFence
	}
	if since := s.authSince.Load(); since != 0 && st.authority() == RoleShadow && now.After(time.Unix(0, since).Add(s.cfg.fence)) {
		return RefusedAckedAfterFlip
	}
	return ""
}

// late takes one late copy under its key's lock, ordered by Workers KV's
// evidence alone (doc.go, Late copies). The key is recorded in the settle
// set as written by a copy either way, so that the flip back waits for its
// verification.
func (s *Store) late(ctx context.Context, st Stage, w TeeWrite, at, now time.Time) (out markOutcome, outcome LateOutcome) {
	h := hashKey(w.Key)
	sl := s.slotOf(h)
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.seq.Add(1)
	defer sl.seq.Add(1)
	sl.touch(now)
	// In complete Workers KV is no longer written: no key enters the set.
	settles := st.mirrors()
	wrote, inSet := s.set.wroteAt(w.Key)
	switch {
	case s.shadowHoldsCopy(ctx, w, now):
		outcome = LateHeld
	case inSet && wrote.After(at.Add(s.cfg.IngestMaxLead)):
		outcome = LateSuperseded
	case inSet || !s.primaryHoldsCopy(ctx, w):
		outcome = LateConflict
	default:
		outcome = LateApplied
	}
	if outcome != LateApplied {
		// Verification brings Workers KV level (doc.go, Late copies).
		if settles {
			out = s.markIngested(w.Key, time.Time{}, now, 0)
		}
		return out, outcome
	}
	// Marked, with its copy counted, before MongoDB takes the write, as
	// the Store's own writes are (see premark).
	if settles {
		out = s.markIngested(w.Key, at, now, 1)
	}
	wr := w.write(h, at, now)
	if err := s.apply(ctx, RoleShadow, wr); err != nil {
		if settles {
			out.merge(s.set.copied(w.Key, now, uncertain(err)))
		}
		return out, LateFailed
	}
	if !settles {
		return out, outcome
	}
	reason, fresh := s.mirror(ctx, RolePrimary, wr, true)
	out.reason = reason
	if !fresh {
		out.merge(s.set.copied(w.Key, now, reason != ""))
	}
	return out, outcome
}

// primaryHoldsCopy reports whether Workers KV holds what a late copy says,
// for a key outside the settle set: the copy is then the last acknowledged
// write (doc.go, Late copies). Called under the key's lock.
func (s *Store) primaryHoldsCopy(ctx context.Context, w TeeWrite) bool {
	e, err := s.get(ctx, RolePrimary, w.Key, readFor(s.withExpiry, false))
	switch {
	case errors.Is(err, kv.ErrNotFound):
		return w.Delete
	case err != nil || w.Delete || !bytes.Equal(e.Value, w.Value) || e.Expiration.IsZero() != w.Expiration.IsZero():
		return false
	}
	// The tee computes a TTL's expiry when the binding acknowledges the
	// write: within the trust given to its clock of Workers KV's own.
	return !s.withExpiry || e.Expiration.Sub(w.Expiration).Abs() <= s.cfg.IngestMaxLead
}

// shadowHoldsCopy reports whether MongoDB holds exactly what a late copy
// says, as verification compares (its expiry within IngestMaxLead, the
// trust given to the tee's clock, when both stores report expiries).
func (s *Store) shadowHoldsCopy(ctx context.Context, w TeeWrite, now time.Time) bool {
	copied := compare.Observation{Found: !w.Delete, Value: w.Value, Expiration: w.Expiration, Metadata: w.Metadata}
	if !s.withExpiry {
		copied.Expiration = time.Time{}
	}
	e, err := s.get(ctx, RoleShadow, w.Key, readFor(s.withExpiry, s.metadata))
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return false
	}
	held := compare.Observation{Found: err == nil, Value: e.Value, Expiration: e.Expiration, Metadata: e.Metadata}
	return compare.Classify(copied, held, compare.Options{Now: now, TTLTolerance: s.cfg.IngestMaxLead}) == compare.Match
}

// ingestTally counts what one Ingest batch refused, and its late copies by
// outcome, for its one log line.
type ingestTally struct {
	refused [len(IngestRefusals)]int
	late    [len(LateOutcomes)]int
	notable bool // a copy refused, or a late copy not applied
}

// logBatch writes one line for a batch that had copies refused or late
// copies not applied, with the counts (doc.go, Forged copies).
func (s *Store) logBatch(ctx context.Context, t ingestTally, copies int) {
	if !t.notable {
		return
	}
	attrs := []slog.Attr{slog.Int("copies", copies)}
	for i, n := range t.refused {
		if n > 0 {
			attrs = append(attrs, slog.Int("refused_"+string(IngestRefusals[i]), n))
		}
	}
	for i, n := range t.late {
		if n > 0 {
			attrs = append(attrs, slog.Int("late_"+string(LateOutcomes[i]), n))
		}
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, "dualwrite: tee copies refused or not applied; their keys are verified against the authoritative store", attrs...)
}
