package dualwrite

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

// IngestRefusal says why an ingested write's acknowledged-at time was not
// trusted. A refused copy is not applied; its key is recorded in the settle
// set, so that verification brings the other store level from the
// authoritative one.
type IngestRefusal string

// The refusals, as Stats.IngestRefused counts them.
const (
	// RefusedAckedPast: acknowledged more than IngestMaxAge before it
	// arrived: a replay, or a clock far behind.
	RefusedAckedPast IngestRefusal = "acked_at_past"
	// RefusedAckedFuture: acknowledged more than IngestMaxLead after it
	// arrived: a clock ahead, or a forgery.
	RefusedAckedFuture IngestRefusal = "acked_at_future"
	// RefusedAckedAfterFlip: a late copy acknowledged more than a fence
	// interval after MongoDB became authoritative (Config.AuthoritativeSince),
	// when no isolate can write its binding any more: not credible,
	// whatever its client says.
	RefusedAckedAfterFlip IngestRefusal = "acked_after_flip"
)

// IngestRefusals lists every IngestRefusal.
var IngestRefusals = [...]IngestRefusal{RefusedAckedPast, RefusedAckedFuture, RefusedAckedAfterFlip}

// LateOutcome is what became of a late copy: an ingested write that
// arrived while MongoDB (the shadow) was authoritative.
type LateOutcome string

// The outcomes, as Stats.LateCopies counts them.
const (
	// LateApplied: the copy's write came after the last write of its key
	// that this Store saw, so it was the last acknowledged: it was written
	// to the authoritative store, and copied to the other.
	LateApplied LateOutcome = "applied"
	// LateSuperseded: the Store wrote the key after the copy's write; the
	// newer value stands, and verification brings Workers KV level.
	LateSuperseded LateOutcome = "superseded"
	// LateConflict: the order is not known (see The handover in the
	// package documentation); the authoritative value stands and a
	// LateConflict record reports both sides.
	LateConflict LateOutcome = "conflict"
	// LateFailed: the copy was the last write, but the authoritative
	// store failed to take it; a LateConflict record reports it.
	LateFailed LateOutcome = "failed"
	// LateHeld: the order is not known, but the authoritative store holds
	// exactly what the copy says. When the last write of its key this
	// Store saw is this very copy (delivered twice), nothing is at stake
	// and no Conflict is reported. Otherwise another write of the same
	// value came through the Store too, which is what two
	// read-modify-writes of one stale value look like (a counter that
	// lost an increment): a Conflict with this Outcome reports it.
	LateHeld LateOutcome = "held"
)

// LateOutcomes lists every LateOutcome.
var LateOutcomes = [...]LateOutcome{LateApplied, LateSuperseded, LateConflict, LateFailed, LateHeld}

// Conflict is the record of a late copy the Store could not order, or
// could not apply, or applied on Workers KV's evidence alone while other
// instances may have written its key (Outcome LateApplied, PeersUntil
// set: Shadow is what MongoDB held before, for the operator to see that it
// was no other instance's newer write): both sides, never a value.
type Conflict struct {
	Namespace string         `json:"namespace"`
	Key       string         `json:"key"` // as the Redactor renders it
	Outcome   LateOutcome    `json:"outcome"`
	Copy      compare.Digest `json:"copy"`   // the late copy: what the binding wrote to Workers KV
	Shadow    compare.Digest `json:"shadow"` // what MongoDB, authoritative, held when it arrived
	// AckedAt is the copy's acknowledged-at time as trusted (bounded by
	// IngestMaxAge and IngestMaxLead); LastWrite the last write of the key
	// that this Store saw, zero when it saw none it can tell; Received
	// when the copy arrived.
	AckedAt   time.Time `json:"acked_at"`
	LastWrite time.Time `json:"last_write,omitzero"`
	Received  time.Time `json:"received"`
	// PeersUntil, when set, is until when other instances may have written
	// the key (Store.SetPeersUntil): not before the copy, so its order
	// against their writes is not known.
	PeersUntil time.Time `json:"peers_until,omitzero"`
	Error      string    `json:"error,omitempty"`
	// Kept is the Keeper's reference to the side the authoritative store
	// does not hold (Config.Keeper); KeepError says why it was not kept.
	Kept      string `json:"kept,omitempty"`
	KeepError string `json:"keep_error,omitempty"`
}

// ConflictSink is the optional ability of a Sink to take Conflict records,
// found by type assertion. Without it they are logged (LogSink does so).
type ConflictSink interface {
	Conflict(ctx context.Context, c Conflict)
}

// Conflict implements ConflictSink: one warning per record.
func (l LogSink) Conflict(ctx context.Context, c Conflict) {
	msg := "dualwrite: a late tee copy conflicts with the authoritative store"
	if c.Outcome == LateApplied {
		msg = "dualwrite: a late tee copy was applied while another instance may have written its key"
	}
	l.Logger.LogAttrs(ctx, slog.LevelWarn, msg,
		slog.String("outcome", string(c.Outcome)), slog.String("namespace", c.Namespace), slog.String("key", c.Key),
		digestAttr("copy", c.Copy), digestAttr("shadow", c.Shadow),
		slog.Time("acked_at", c.AckedAt), slog.Time("last_write", c.LastWrite), slog.Time("received", c.Received),
		slog.Time("peers_until", c.PeersUntil), slog.String("error", c.Error),
		slog.String("kept", c.Kept), slog.String("keep_error", c.KeepError))
}

// MaxConflicts is how many Conflict records Conflicts keeps, the latest.
const MaxConflicts = 256

// conflictLog keeps the latest Conflict records.
type conflictLog struct {
	mu    sync.Mutex
	recs  []Conflict
	total uint64
}

func (l *conflictLog) add(c Conflict) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total++
	if len(l.recs) == MaxConflicts {
		copy(l.recs, l.recs[1:])
		l.recs = l.recs[:MaxConflicts-1]
	}
	l.recs = append(l.recs, c)
}

func (s *Store) conflictCount() (int, uint64) {
	s.conflicts.mu.Lock()
	defer s.conflicts.mu.Unlock()
	return len(s.conflicts.recs), s.conflicts.total
}

// Conflicts returns the latest Conflict records, oldest first, and how
// many there were since New.
func (s *Store) Conflicts() ([]Conflict, uint64) {
	s.conflicts.mu.Lock()
	defer s.conflicts.mu.Unlock()
	return append([]Conflict(nil), s.conflicts.recs...), s.conflicts.total
}

// trustAcked bounds an ingested write's acknowledged-at time by its
// arrival at now: a time more than IngestMaxAge before or IngestMaxLead
// after is refused, and one after now is taken as now, since no write was
// acknowledged after the Store received its copy. The Store's own
// observation (the arrival) thus orders what a client's clock cannot.
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

// credible refuses a late copy acknowledged at at when no isolate could
// write its binding then: a fence interval (the longest an isolate trusts
// a stage it read) after MongoDB became authoritative (authSince), past
// the trust given to the tee's clock.
func (s *Store) credible(at time.Time) IngestRefusal {
	if since := s.authSince.Load(); since != 0 && at.After(time.Unix(0, since).Add(s.cfg.fence+s.cfg.IngestMaxLead)) {
		return RefusedAckedAfterFlip
	}
	return ""
}

// lateOrder decides a late copy acknowledged at at, arriving at now: after
// the last write of its key that this Store saw (applied), before it
// (superseded), or not known (conflict). Two times closer than
// IngestMaxLead, the trust given to a client's clock, are not ordered.
// A key this Store holds in its settle set has its last write's time
// there; a key it does not hold was last written through it at least a
// consistency window ago (a key leaves the set only a window after its
// last write), which orders a copy acknowledged since, provided the Store
// has run for that long and its set never overflowed.
func (s *Store) lateOrder(key string, at, now time.Time) (LateOutcome, time.Time) {
	wrote, inSet := s.set.wroteAt(key)
	if !inSet {
		_, _, _, reconcile := s.set.snapshot()
		since := time.Unix(0, s.started)
		if reconcile || s.cfg.window <= 0 || now.Sub(since) < s.cfg.window || !at.After(now.Add(-s.cfg.window).Add(s.cfg.IngestMaxLead)) {
			return LateConflict, time.Time{}
		}
		return LateApplied, time.Time{}
	}
	tol := s.cfg.IngestMaxLead
	switch {
	case wrote.IsZero():
		return LateConflict, wrote
	case at.After(wrote.Add(tol)):
		return LateApplied, wrote
	case wrote.After(at.Add(tol)):
		return LateSuperseded, wrote
	}
	return LateConflict, wrote
}

// late takes one late copy under its key's lock: it decides its order,
// applies it to the authoritative store when it was the last write, and
// records the key in the settle set as written by a copy, so that the flip
// back waits for its verification. It returns the Conflict to report, if
// any.
func (s *Store) late(ctx context.Context, st Stage, w TeeWrite, at, now time.Time) (out markOutcome, outcome LateOutcome, conflict *Conflict) {
	h := hashKey(w.Key)
	sl := s.slotOf(h)
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.seq.Add(1)
	defer sl.seq.Add(1)
	sl.touch(now)
	outcome, last := s.lateOrder(w.Key, at, now)
	// Another instance may have written the key after the copy, and this
	// Store never saw it: its own writes order the copy only when one of
	// them supersedes it.
	peers := s.peersAfter(at)
	if !peers.IsZero() && outcome == LateApplied {
		outcome = LateConflict
	}
	// Workers KV holding the copy's value orders it still: a newer write
	// through any instance reaches Workers KV after MongoDB. But one on
	// its way there does not show yet, so with other instances the copy
	// is applied and reported, with what MongoDB held, for the operator
	// to see that it was no other instance's newer write.
	var witness *Conflict
	if outcome == LateConflict && s.primaryHoldsCopy(ctx, w) {
		outcome = LateApplied
		if !peers.IsZero() {
			if c, copied, held, same := s.conflictOf(ctx, w, at, last, now, LateApplied); !same {
				c.PeersUntil = peers
				// What MongoDB held is kept before the copy overwrites it.
				s.keep(ctx, &c, w.Key, held, copied)
				witness = &c
			}
		}
	}
	// In complete Workers KV is neither written nor settled any more:
	// MongoDB alone takes (or keeps) the value, and no key enters the set.
	settles := st.mirrors()
	if outcome != LateApplied {
		// The key stays in the set: verification brings Workers KV level
		// with the value that stands, after the window.
		if settles {
			out = s.markIngested(w.Key, time.Time{}, now, 0)
		}
		if outcome == LateSuperseded {
			return out, outcome, nil
		}
		c, copied, held, same := s.conflictOf(ctx, w, at, last, now, outcome)
		if same {
			if last.Equal(at) {
				// This very copy, delivered before: nothing at stake.
				return out, LateHeld, nil
			}
			// The same value written twice, once on each side of the
			// flip, is what a read-modify-write that read a stale value
			// looks like: an update may be lost, so it is reported.
			// Nothing is displaced, so nothing is kept.
			c.Outcome, c.PeersUntil = LateHeld, peers
			return out, LateHeld, &c
		}
		c.PeersUntil = peers
		s.keep(ctx, &c, w.Key, copied, held)
		return out, outcome, &c
	}
	// Marked, with its copy counted, before MongoDB takes the write, as
	// the Store's own writes are (see premark).
	if settles {
		out = s.markIngested(w.Key, at, now, 1)
	}
	wr := w.write(h, at, now)
	if err := s.apply(ctx, RoleShadow, wr); err != nil {
		if settles {
			out.add(s.set.copied(w.Key, now, uncertain(err)))
		}
		c, copied, held, _ := s.conflictOf(ctx, w, at, last, now, LateFailed)
		c.Error, c.PeersUntil = compare.ErrorClass(err), peers
		s.keep(ctx, &c, w.Key, copied, held)
		return out, LateFailed, &c
	}
	if !settles {
		return out, outcome, witness
	}
	reason, fresh := s.mirror(ctx, RolePrimary, wr, true)
	out.reason = reason
	if !fresh {
		out.add(s.set.copied(w.Key, now, reason != ""))
	}
	return out, outcome, witness
}

// primaryHoldsCopy reports whether a late copy whose order is not known is
// the last write Workers KV acknowledged for its key: the key is outside
// the settle set, and Workers KV holds what the copy says. A key outside
// the set was, if this Store wrote it at all, verified alike in both
// stores after its last write; since the flip every write through the
// Store reaches Workers KV after MongoDB, and one still on its way holds
// its key in the set. So nothing written through the Store came after the
// copy's write in Workers KV, which was authoritative until the flip: the
// copy is the last acknowledged write, and MongoDB must take it. Called
// under the key's lock.
func (s *Store) primaryHoldsCopy(ctx context.Context, w TeeWrite) bool {
	if _, inSet := s.set.wroteAt(w.Key); inSet {
		return false
	}
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

// conflictOf builds the record of a late copy, with what the authoritative
// store holds now, and returns both sides and whether what it holds is
// exactly what the copy says, as verification compares (its expiry within
// IngestMaxLead, the trust given to the tee's clock, when both stores
// report expiries).
func (s *Store) conflictOf(ctx context.Context, w TeeWrite, at, last, now time.Time, outcome LateOutcome) (c Conflict, copied, held compare.Observation, same bool) {
	copied = compare.Observation{Found: !w.Delete, Value: w.Value, Expiration: w.Expiration, Metadata: w.Metadata}
	e, err := s.get(ctx, RoleShadow, w.Key, readFor(s.withExpiry, s.metadata))
	held = compare.Observation{Found: err == nil, Value: e.Value, Expiration: e.Expiration, Metadata: e.Metadata}
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		held.Err = err
	}
	like := copied
	if !s.withExpiry {
		like.Expiration = time.Time{}
	}
	same = compare.Classify(like, held, compare.Options{Now: now, TTLTolerance: s.cfg.IngestMaxLead}) == compare.Match
	rec := s.cfg.Redactor.Record(w.Key, compare.ValueMismatch, copied, held, now)
	return Conflict{
		Namespace: rec.Namespace, Key: rec.Key, Outcome: outcome, Copy: rec.Primary, Shadow: rec.Shadow,
		AckedAt: at, LastWrite: last, Received: now, Error: rec.Error,
	}, copied, held, same
}

// reportConflict hands a Conflict to the Sink, outside every lock.
func (s *Store) reportConflict(ctx context.Context, c Conflict) {
	s.conflicts.add(c)
	cs, ok := s.sink.(ConflictSink)
	if !ok {
		cs = LogSink{Logger: s.log}
	}
	defer func() {
		if v := recover(); v != nil {
			s.logPanic("dualwrite: the conflict sink panicked; the record was dropped (later panics are not logged)",
				"sink", v, debug.Stack())
		}
	}()
	cs.Conflict(ctx, c)
}
