package keep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// Side names a side of a recorded conflict, as the record does.
type Side string

// The sides.
const (
	// Copy is the late copy: what the binding wrote to Workers KV.
	Copy Side = "copy"
	// Shadow is what MongoDB held when the copy arrived.
	Shadow Side = "shadow"
)

// ParseSide returns the Side s names, or an error matching ErrSide.
func ParseSide(s string) (Side, error) {
	switch Side(s) {
	case Copy, Shadow:
		return Side(s), nil
	}
	return "", fmt.Errorf("%w, not %q", ErrSide, s)
}

// Standing is the side the authoritative store holds after a record's
// copy: the copy when it was applied, else what MongoDB held.
func Standing(outcome dualwrite.LateOutcome) Side {
	if outcome == dualwrite.LateApplied {
		return Copy
	}
	return Shadow
}

// Ledger is what a Decider needs of the conflict ledger
// (control.ConflictLedger).
type Ledger interface {
	Conflict(ctx context.Context, id string) (control.ConflictRecord, error)
	Decide(ctx context.Context, id string, d control.Decision) error
}

// Target is the store a decision writes through: the namespace's
// dual-write store (dualwrite.Store), so that the write reaches the
// authoritative store and is copied to the other as any write is, and is
// made under the key's lock only if the key holds what the decision
// expects (dualwrite.Store.WriteIf), so that no write through the store
// comes between the check and the write.
type Target interface {
	WriteIf(ctx context.Context, e kv.Entry, del bool, expect *dualwrite.Fingerprint) (dualwrite.Fingerprint, error)
}

// Decider carries out decisions (see the package documentation).
type Decider struct {
	Ledger Ledger
	Kept   Store
	// Target returns the store of a Workers KV namespace ID; false when
	// this instance serves none.
	Target func(kvNamespace string) (Target, bool)
	// Instance names this instance in the decisions it records.
	Instance string
	Clock    clock.Clock
	// Logger, when set, says each decision carried out.
	Logger *slog.Logger
}

// Decide carries out the decision to keep side keep for the record id:
// with the side that stands, nothing is written; with the kept one, it is
// written through the record's namespace store if the key still holds the
// side that stood (or holds the kept one already), or whatever the key
// holds when force is set. It returns the record with its decision.
// Errors: ErrSide, control.ErrNoConflict, control.ErrDecided, ErrGone,
// ErrNotServed, ErrWrittenSince, and the stores' and the ledger's own.
func (d *Decider) Decide(ctx context.Context, id string, keep Side, force bool) (control.ConflictRecord, error) {
	if _, err := ParseSide(string(keep)); err != nil {
		return control.ConflictRecord{}, err
	}
	rec, err := d.Ledger.Conflict(ctx, id)
	if err != nil {
		return control.ConflictRecord{}, err
	}
	if rec.Decision != nil {
		return rec, fmt.Errorf("%w: %s, by %s at %s", control.ErrDecided, rec.Decision.Keep, rec.Decision.Instance, rec.Decision.At.Format("2006-01-02T15:04:05Z07:00"))
	}
	dec := control.Decision{Keep: string(keep), At: clock.OrReal(d.Clock).Now(), Instance: d.Instance}
	if keep != Standing(rec.Outcome) {
		if dec.Forced, err = d.restore(ctx, rec, force); err != nil {
			return rec, err
		}
		dec.Restored = true
	}
	if err := d.Ledger.Decide(ctx, id, dec); err != nil {
		if dec.Restored && errors.Is(err, control.ErrDecided) {
			// Another decision was recorded while this one wrote: the key
			// holds the kept side, whatever that one says.
			err = fmt.Errorf("%w by another at the same time, after this one wrote the kept side back: read the key and the record", err)
		}
		return rec, err
	}
	rec.Decision = &dec
	if rec.Kept != "" {
		// It goes at its time anyway; a failure here keeps it no longer.
		_ = d.Kept.Discard(ctx, rec.Kept)
	}
	if d.Logger != nil {
		d.Logger.LogAttrs(ctx, slog.LevelInfo, "keep: a late copy's conflict was decided",
			slog.String("conflict", id), slog.String("keep", dec.Keep), slog.Bool("restored", dec.Restored), slog.Bool("forced", dec.Forced))
	}
	return rec, nil
}

// restore writes the kept side of rec through its namespace's store;
// forced reports that the key held neither side and force was set.
func (d *Decider) restore(ctx context.Context, rec control.ConflictRecord, force bool) (forced bool, err error) {
	if rec.Kept == "" {
		why := "no Keeper was set when it arrived"
		if rec.KeepError != "" {
			why = rec.KeepError
		}
		return false, fmt.Errorf("%w: nothing was kept for this record: %s", ErrGone, why)
	}
	v, err := d.Kept.Load(ctx, rec.Kept)
	if err != nil {
		return false, err
	}
	t, ok := d.Target(rec.KVNamespace)
	if !ok {
		return false, fmt.Errorf("%w: %s", ErrNotServed, rec.KVNamespace)
	}
	kept := FingerprintOf(compare.Observation{Found: v.Found, Value: v.Entry.Value, Expiration: v.Entry.Expiration, Metadata: v.Entry.Metadata})
	e := v.Entry
	e.Key = v.Key
	expect := v.Standing
	// Forced, it writes over what the key holds when it looks: should
	// that change before the write, it looks again, a few times.
	for range forceTries {
		holds, err := t.WriteIf(ctx, e, !v.Found, &expect)
		switch {
		case errors.Is(err, dualwrite.ErrChanged) && holds == kept:
			return false, nil // an earlier decision wrote it, and was not recorded
		case errors.Is(err, dualwrite.ErrChanged) && force:
			expect, forced = holds, true
			continue
		case errors.Is(err, dualwrite.ErrChanged):
			return false, ErrWrittenSince
		case errors.Is(err, kv.ErrInvalidTTL):
			return false, fmt.Errorf("%w: the kept value expires too soon to be written: %w", ErrGone, err)
		}
		return forced, err
	}
	return false, fmt.Errorf("%w, again and again while this decision tried to force it", ErrWrittenSince)
}

// forceTries is how many times a forced decision looks at its key.
const forceTries = 5
