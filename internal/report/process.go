package report

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/compare"
)

// observed is one key as both sides saw it.
type observed struct {
	candidate
	primary, shadow compare.Observation
}

// process reads a batch from both sides, classifies its keys, and repairs
// the divergent ones when asked. It fails only when ctx ends; a store that
// cannot be read yields error kinds.
func (e *engine) process(ctx context.Context, b *batch) error {
	obs, err := e.observe(ctx, b.keys)
	if err != nil {
		return err
	}
	now := e.cfg.Clock.Now()
	opts := compare.Options{Now: now, TTLTolerance: e.cfg.TTLTolerance}
	var divergent []observed
	for _, o := range obs {
		kind := compare.Classify(o.primary, o.shadow, opts)
		m := b.module(o.module)
		if o.unlisted { // counted by what the stores hold, as a listing would
			m.PrimaryKeys += present(o.primary)
			m.ShadowKeys += present(o.shadow)
		}
		m.Compared++
		m.Kinds[kind]++
		if kind != compare.Match {
			b.records = append(b.records, e.redact.Record(o.key, kind, o.primary, o.shadow, now))
		}
		if o.shadow.Found && !utf8.Valid(o.shadow.Value) {
			m.BinaryInShadow++
			b.binary = append(b.binary, e.redact.Record(o.key, kind, o.primary, o.shadow, now))
		}
		if o.shadow.Found && tooLargeForBot(o.key, o.shadow) {
			m.TooLargeForBot++
			b.large = append(b.large, e.redact.Record(o.key, kind, o.primary, o.shadow, now))
		}
		if kind.Divergent() && e.cfg.Repair.Enabled {
			divergent = append(divergent, o)
		}
		if kind.Divergent() && e.settling() {
			b.differing = append(b.differing, differing{key: o.key, module: o.module, kind: kind, state: stateOf(o.primary, o.shadow), at: now})
		}
	}
	if len(divergent) > 0 {
		if err := e.repairKeys(ctx, divergent, &b.repair); err != nil {
			return err
		}
	}
	b.keys = nil // the values go with the observations
	return nil
}

// tooLargeForBot reports a shadow value past mongokv.InlineLimit ("Values
// that are not text" in the package doc).
func tooLargeForBot(key string, o compare.Observation) bool {
	return len(o.Value) > mongokv.InlineLimit(mongokv.MaxDocumentSize, key, !o.Expiration.IsZero(), o.Metadata)
}

func present(o compare.Observation) int64 {
	if o.Found {
		return 1
	}
	return 0
}

// observe reads the keys from both sides at once. A side is asked only for
// the keys it listed; the others are missing there by the listing.
func (e *engine) observe(ctx context.Context, keys []candidate) ([]observed, error) {
	var pk, sk []string
	for _, c := range keys {
		if c.inPrimary {
			pk = append(pk, c.key)
		}
		if c.inShadow {
			sk = append(sk, c.key)
		}
	}
	po, so, err := e.fetchBoth(ctx, pk, sk)
	if err != nil {
		return nil, err
	}
	out := make([]observed, len(keys))
	for i, c := range keys {
		out[i].candidate = c
		if c.inPrimary {
			out[i].primary, po = po[0], po[1:]
		}
		if c.inShadow {
			out[i].shadow, so = so[0], so[1:]
		}
	}
	return out, nil
}

// fetchBoth reads pk from the primary and sk from the shadow concurrently;
// without expiries on both sides, none is kept.
func (e *engine) fetchBoth(ctx context.Context, pk, sk []string) (po, so []compare.Observation, err error) {
	done := make(chan error, 1)
	go func() {
		var err error
		so, err = e.shadow.fetch(ctx, sk)
		done <- err
	}()
	po, perr := e.primary.fetch(ctx, pk)
	serr := <-done
	if perr != nil {
		return nil, nil, perr
	}
	if serr != nil {
		return nil, nil, serr
	}
	if !e.expiries {
		for _, o := range [][]compare.Observation{po, so} {
			for i := range o {
				o[i].Expiration = time.Time{}
			}
		}
	}
	return po, so, nil
}
