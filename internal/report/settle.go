package report

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
)

// DefaultMaxSettle is the most differing keys a run reads again after
// Config.Settle: 100 bulk reads a side. Keys past it count as the scan
// found them.
const DefaultMaxSettle = 10_000

// Why a key was left for later (LeftKey.Reason).
const (
	// ReasonChanged: one side or both changed between the scan's read and
	// the read Settle later: a write, or its copy, was on its way.
	ReasonChanged = "changed between two reads a settle interval apart: a write or its copy was on its way"
)

// LeftKey is a key that differed at the scan and changed by the time it was
// read again: a copy on its way, not a divergence the gate counts.
type LeftKey struct {
	Namespace string       `json:"namespace"`
	Key       string       `json:"key"`  // per the key policy
	Kind      compare.Kind `json:"kind"` // at the scan's read
	Reason    string       `json:"reason"`
}

// SettleReport says what the run made of the keys that differed at the scan
// ("Reading again what differs" in the package doc): Rechecked were read
// again, Settled, Held and Left of them; Omitted, past DefaultMaxSettle,
// were not.
type SettleReport struct {
	Seconds   float64 `json:"seconds"`
	Rechecked int64   `json:"rechecked"`
	Settled   int64   `json:"settled"`
	Held      int64   `json:"held"`
	Left      int64   `json:"left"`
	Omitted   int64   `json:"omitted"`
	Errors    int64   `json:"errors"` // read again with an error: counted as the scan found them
}

// differing is a key the scan found divergent, to be read again.
type differing struct {
	key, module string
	kind        compare.Kind
	state       [32]byte // both sides as the scan read them
	at          time.Time
}

// stateOf digests both sides of a key as read: presence, value, expiry
// (whole seconds) and metadata.
func stateOf(p, s compare.Observation) [32]byte {
	h := sha256.New()
	for _, o := range []compare.Observation{p, s} {
		var exp int64
		if !o.Expiration.IsZero() {
			exp = o.Expiration.Unix()
		}
		// The lengths first, so that one side's bytes never pass for another's.
		fmt.Fprintf(h, "%t %d %d %d\n", o.Found, exp, len(o.Value), len(o.Metadata))
		h.Write(o.Value)
		h.Write(o.Metadata)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// settling reports whether divergent keys are read again: not in a repair,
// whose dry run says at once what it would copy (a backfill's waited 70 s
// for it), and which, applied, reads its repairs back.
func (e *engine) settling() bool { return e.cfg.Settle > 0 && !e.cfg.Repair.Enabled }

// settle reads the keys the scan found divergent again, Settle after each
// was first read, and counts each as it then stands: agreeing, the same
// difference (divergent), or changed (pending, left for later).
func (e *engine) settle(ctx context.Context) error {
	if !e.settling() {
		return nil
	}
	e.mu.Lock()
	keys := e.differing
	e.mu.Unlock()
	rep := &SettleReport{Seconds: e.cfg.Settle.Seconds(), Omitted: e.settleOmitted}
	e.settled = rep
	if len(keys) == 0 {
		return nil
	}
	last := slices.MaxFunc(keys, func(a, b differing) int { return a.at.Compare(b.at) }).at
	if wait := last.Add(e.cfg.Settle).Sub(e.cfg.Clock.Now()); wait > 0 {
		e.notice("shadow-report: %s differed; reading them again in %s, when any copy on its way has landed", plural(int64(len(keys)), "key"), wait.Round(time.Second))
		if clock.Sleep(ctx, e.cfg.Clock, wait) != nil {
			return fmt.Errorf("%w while waiting to read %d differing keys again: %w", ErrInterrupted, len(keys), context.Cause(ctx))
		}
	}
	names := make([]string, len(keys))
	for i, d := range keys {
		names[i] = d.key
	}
	po, so, err := e.fetchBoth(ctx, names, names)
	if err != nil {
		return err
	}
	now := e.cfg.Clock.Now()
	opts := compare.Options{Now: now, TTLTolerance: e.cfg.TTLTolerance}
	e.mu.Lock()
	defer e.mu.Unlock()
	moved := map[string]compare.Kind{} // redacted key: its kind now
	for i, d := range keys {
		p, s := po[i], so[i]
		rep.Rechecked++
		kind := compare.Classify(p, s, opts)
		switch {
		case p.Err != nil || s.Err != nil:
			rep.Errors++
			continue
		case agrees(kind):
			rep.Settled++
		case stateOf(p, s) == d.state:
			rep.Held++
			continue
		default:
			kind = compare.Pending
			rep.Left++
			if len(e.left) < e.cfg.MaxRecords {
				e.left = append(e.left, LeftKey{Namespace: d.module, Key: e.redact.Key(d.key), Kind: d.kind, Reason: ReasonChanged})
			}
		}
		m := e.Modules[d.module]
		if m == nil {
			m = e.Modules[OtherModules]
		}
		if m != nil {
			m.Kinds[d.kind]--
			m.Kinds[kind]++
		}
		moved[e.redact.Key(d.key)] = kind
	}
	kept := e.Records[:0]
	for _, r := range e.Records {
		if k, ok := moved[r.Key]; ok && r.Kind.Divergent() {
			if agrees(k) {
				continue
			}
			r.Kind = k
		}
		kept = append(kept, r)
	}
	e.Records = kept
	return nil
}
