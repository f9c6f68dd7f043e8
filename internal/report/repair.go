package report

import (
	"context"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

// expiryMargin is added to kv.MinTTL when deciding whether an expiry can
// still be copied: the write reaches the store a little later than now, and
// the store's clock may run ahead of ours.
const expiryMargin = 10 * time.Second

func (t *RepairCounts) add(o *RepairCounts) {
	t.Puts += o.Puts
	t.Deletes += o.Deletes
	t.Expiring += o.Expiring
	t.Failed += o.Failed
	t.Rechecked += o.Rechecked
	t.Verified += o.Verified
	t.Pending += o.Pending
	t.Remaining += o.Remaining
	t.After = t.After.add(o.After)
}

// roles returns the authoritative side and the side it is copied over.
func (e *engine) roles() (auth, target *side) {
	if e.cfg.Repair.Authoritative == Shadow {
		return e.shadow, e.primary
	}
	return e.primary, e.shadow
}

func (o observed) of(r Role) compare.Observation {
	if r == Primary {
		return o.primary
	}
	return o.shadow
}

// repairKeys copies the authoritative side over the other for each
// divergent key, in bulk (dry run: only counts), then reads the written keys
// back from both sides and classifies them again.
func (e *engine) repairKeys(ctx context.Context, keys []observed, t *RepairCounts) error {
	auth, target := e.roles()
	now := e.cfg.Clock.Now()
	var puts []kv.Entry
	var dels, lapsing []string
	for _, o := range keys {
		a, other := o.of(auth.role), o.of(target.role)
		switch {
		case !a.Found:
			dels = append(dels, o.key)
		case !a.Expiration.IsZero() && a.Expiration.Sub(now) < kv.MinTTL+expiryMargin:
			// Too close to its end to be written with its expiry: make sure
			// no stale copy outlives it, and let it lapse. It is not
			// re-checked: it differs until it expires.
			t.Expiring++
			if other.Found {
				lapsing = append(lapsing, o.key)
			}
		default:
			puts = append(puts, kv.Entry{Key: o.key, Value: a.Value, Expiration: a.Expiration, Metadata: a.Metadata})
		}
	}
	t.Puts += int64(len(puts))
	t.Deletes += int64(len(dels) + len(lapsing))
	if !e.cfg.Repair.Apply || len(puts)+len(dels)+len(lapsing) == 0 {
		return nil
	}
	failedPuts, err := target.writeAll(ctx, puts)
	if err != nil {
		return err
	}
	failedDels, err := target.deleteAll(ctx, append(dels, lapsing...))
	if err != nil {
		return err
	}
	t.Failed += int64(len(failedPuts) + len(failedDels))
	written := make([]string, 0, len(puts)+len(dels))
	for _, p := range puts {
		written = append(written, p.Key)
	}
	written = append(written, dels...)
	if len(written) == 0 {
		return nil
	}
	return e.recheck(ctx, written, target.role, t)
}

// recheck reads keys from both sides and counts their kinds now. Keys
// written into the primary get its consistency window: a stale read there
// is "pending", not a failure.
func (e *engine) recheck(ctx context.Context, keys []string, written Role, t *RepairCounts) error {
	po, so, err := e.fetchBoth(ctx, keys, keys)
	if err != nil {
		return err
	}
	now := e.cfg.Clock.Now()
	opts := compare.Options{Now: now, TTLTolerance: e.cfg.TTLTolerance}
	if written == Primary {
		opts.LastWrite, opts.ConsistencyWindow = now, e.cfg.Repair.RecheckWindow
	}
	if t.After == nil {
		t.After = newKindCounts()
	}
	for i := range keys {
		kind := compare.Classify(po[i], so[i], opts)
		t.Rechecked++
		t.After[kind]++
		switch {
		case agrees(kind):
			t.Verified++
		case kind == compare.Pending:
			t.Pending++
		default:
			t.Remaining++
		}
	}
	return nil
}
