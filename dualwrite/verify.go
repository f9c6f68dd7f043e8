package dualwrite

import (
	"context"
	"errors"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

// Settle runs one verification pass now and returns how many keys it
// compared. Every unsettled key whose last write (or copy) is older than
// the consistency window and that has no copy on its way, and every
// suspect (a key a sampled read found different) a window after its
// difference was seen, is read from both stores in bulk (VerifyBatch keys
// a request, kv.BulkGetter when the store has it) and classified with
// package compare:
//   - equal: the key is settled and leaves the set (and the journal);
//   - different: the confirmation rule decides. A difference first seen,
//     or one that changed on either side (primary state or shadow state,
//     by digest, length and expiry), is held and read again a window
//     later; the same difference, held for at least a window with no
//     write of the key seen in between, is confirmed, reported to the
//     Sink, and the key becomes dirty, for repair through its lane;
//   - a read error, a write racing the read, or a key about to expire: the
//     key stays for the next pass.
//
// Reads of the primary wait on Config.PrimaryBudget, reads of the shadow on
// Config.ShadowBudget; reads of the other store are refused while its
// breaker is open. The Store runs a pass every
// RepairInterval and when a breaker closes; passes never run together, so
// a Sink or an Observer, which a pass calls, must not call Settle.
func (s *Store) Settle(ctx context.Context) (int, error) {
	if s.closed.Load() {
		return 0, errClosed
	}
	return s.settlePass(ctx)
}

func (s *Store) settlePass(ctx context.Context) (int, error) {
	select {
	case s.settling <- struct{}{}:
		defer func() { <-s.settling }()
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	st := s.Stage()
	if !st.mirrors() {
		return 0, nil
	}
	auth := st.authority()
	now := s.clock.Now()
	if s.breakers[auth.other()].isOpen(now) {
		return 0, nil
	}
	cutoff := now.Add(-s.cfg.window)
	// The fleet's watermark, before any read: a copy it says had landed
	// did so before the reads below.
	r := rule{window: int64(s.cfg.window), mark: s.fleetMark(ctx)}
	refs := append(s.set.due(MarkUnsettled, cutoff, s.cfg.MaxDirty, r.mark), s.set.dueSuspects(cutoff, s.cfg.MaxSuspects, r.mark)...)
	n := 0
	for lo := 0; lo < len(refs); lo += s.cfg.VerifyBatch {
		chunk := refs[lo:min(lo+s.cfg.VerifyBatch, len(refs))]
		if err := s.verify(ctx, auth, chunk, r); err != nil {
			return n, err
		}
		n += len(chunk)
	}
	return n, nil
}

// verifyBytes is the most bytes of values one verification read is meant
// to return: Workers KV's limit on one bulk get, which it refuses past.
const verifyBytes = kv.MaxValueSize

// verify compares one batch of keys across both stores. The sizes of the
// values are not known before they are read, so the authoritative store is
// read with kv.ReadSplit: a read refused as too large (kv.ErrTooLarge) is
// asked again in halves, down to a key read alone. Each answer, one at a
// time, is then read from the other store in reads cut by the sizes the
// authoritative store returned (at most verifyBytes a read, a larger key
// alone), and judged. One large key therefore costs its own reads and never
// holds back the keys batched with it, and a pass holds about two answers'
// values at a time.
func (s *Store) verify(ctx context.Context, auth Role, refs []settleRef, r rule) error {
	keys := make([]string, len(refs))
	seqs := make([]uint64, len(refs))
	for i, r := range refs {
		keys[i] = r.key
		seqs[i] = s.slotOf(hashKey(r.key)).seq.Load()
	}
	lo := 0
	return s.observe(ctx, auth, keys, false, func(part []string, po []compare.Observation) error {
		at := lo
		lo += len(part)
		so := make([]compare.Observation, 0, len(part))
		for _, group := range bySize(part, po, verifyBytes) {
			err := s.observe(ctx, auth.other(), group, true, func(_ []string, o []compare.Observation) error {
				so = append(so, o...)
				return nil
			})
			if err != nil {
				return err
			}
		}
		var obs [2][]compare.Observation
		obs[auth], obs[auth.other()] = po, so
		s.judge(ctx, auth, refs[at:lo], seqs[at:lo], obs, r)
		return nil
	})
}

// bySize cuts keys into runs whose values, as obs saw them, add up to at
// most limit bytes; a key larger than limit is a run of its own.
func bySize(keys []string, obs []compare.Observation, limit int) [][]string {
	var out [][]string
	start, total := 0, 0
	for i := range keys {
		n := len(obs[i].Value) + len(obs[i].Metadata)
		if i > start && total+n > limit {
			out = append(out, keys[start:i])
			start, total = i, 0
		}
		total += n
	}
	if start < len(keys) {
		out = append(out, keys[start:])
	}
	return out
}

// judge classifies the observations of refs, whose slots' sequences were
// seqs before the reads, and settles, holds or confirms each key's
// difference by rule r. A confirmed difference is reported unless another
// instance of the fleet claimed it first; a key recovered from the journal
// that differs is repaired without a report. Either is counted apart, and
// verified as Pending: a repair of it is under way.
func (s *Store) judge(ctx context.Context, auth Role, refs []settleRef, seqs []uint64, obs [2][]compare.Observation, r rule) {
	now := s.clock.Now()
	for i, ref := range refs {
		seq := s.slotOf(hashKey(ref.key)).seq.Load()
		p, sh := obs[RolePrimary][i], obs[RoleShadow][i]
		kind := compare.Classify(p, sh, compare.Options{Now: now, Raced: seqs[i]&1 == 1 || seq != seqs[i]})
		var out markOutcome
		switch {
		case kind == compare.Match:
			if s.set.settle(ref) {
				out.changed = s.journal != nil && !ref.suspect
				if ref.held {
					s.ctr.cleared.Add(1)
				}
			}
		case kind.Divergent():
			diff := s.difference(p, sh, nil, 0)
			v, first, changed := s.set.judge(ref, diff, now, r)
			out.add(first, changed)
			switch v {
			case verdictConfirmed:
				s.kickRepair()
				if !s.claim(ctx, ref.key, diff) {
					s.ctr.elsewhere.Add(1)
					kind = compare.Pending
					break
				}
				s.ctr.confirmed.Add(1)
				s.deliver(ctx, s.cfg.Redactor.Record(ref.key, kind, p, sh, now))
			case verdictRecovered:
				s.kickRepair()
				kind = compare.Pending
			case verdictRaced:
				kind = compare.Inconclusive
			default:
				kind = compare.Suspected
			}
		}
		s.ctr.verified(kind)
		s.report(ctx, OpVerify, auth.other(), out)
		s.obs.Verified(ctx, VerifyEvent{Kind: kind, Namespace: kv.ModuleOf(ref.key), Suspected: ref.held})
	}
}

// difference is the held difference of two observations; sum and length
// stand for the primary's value when it is a tee's digest.
func (s *Store) difference(p, sh compare.Observation, sum *[32]byte, length int) held {
	return held{primary: keyStateOf(p, sum, length, s.metadata && sum == nil), shadow: keyStateOf(sh, nil, 0, s.metadata && sum == nil)}
}

// observe reads keys from store r for verification, in bulk when it can,
// through kv.ReadSplit, and hands each answer to piece as one observation
// per key of the part it covers, in order. A failed read becomes an
// observation with Err for each of its keys; only the end of ctx fails the
// pass. Each request waits on the primary's budget and runs under its own
// timeout, which allows for the bytes it may return; reads of the other
// store (guarded) go through its breaker.
func (s *Store) observe(ctx context.Context, r Role, keys []string, guarded bool, piece func([]string, []compare.Observation) error) error {
	call := func(ctx context.Context, requests int, bytes int64, read func(context.Context) error) error {
		if err := s.waitBudget(ctx, r, requests); err != nil {
			return err
		}
		start := s.clock.Now()
		if !guarded {
			return s.do(s.settler, ctx, start, bytes, read)
		}
		_, err := s.breakers[r].run(start, func() error { return s.do(s.settler, ctx, start, bytes, read) })
		return err
	}
	many := func(ctx context.Context, keys []string) (got []kv.Entry, err error) {
		requests := 1
		if s.bulk[r] == nil {
			requests = len(keys)
		}
		err = call(ctx, requests, verifyBytes, func(ctx context.Context) error {
			got, err = s.readMany(ctx, r, keys)
			return err
		})
		return got, err
	}
	one := func(ctx context.Context, key string) (e kv.Entry, err error) {
		err = call(ctx, 1, kv.MaxValueSize, func(ctx context.Context) error {
			e, err = s.get(ctx, r, key, readFor(s.expiry[r] != nil, s.expiry[r] != nil))
			return err
		})
		return e, err
	}
	return kv.ReadSplit(ctx, keys, many, one, func(part []string, got []kv.Entry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		out := make([]compare.Observation, len(part))
		if err != nil {
			for i := range out {
				out[i].Err = err
			}
			return piece(part, out)
		}
		byKey := make(map[string]kv.Entry, len(got))
		for _, e := range got {
			byKey[e.Key] = e
		}
		for i, k := range part {
			if e, ok := byKey[k]; ok {
				out[i] = observation(e, nil, s.withExpiry, s.metadata)
			}
		}
		return piece(part, out)
	})
}

// readMany reads keys from store r: one bulk call when r is a
// kv.BulkGetter, else one read a key. Missing keys are absent.
func (s *Store) readMany(ctx context.Context, r Role, keys []string) (_ []kv.Entry, err error) {
	defer s.recovered(r, &err)
	if s.bulk[r] != nil {
		return s.bulk[r].GetMany(ctx, keys)
	}
	out := make([]kv.Entry, 0, len(keys))
	for _, k := range keys {
		e, err := s.get(ctx, r, k, readFor(s.expiry[r] != nil, s.expiry[r] != nil))
		switch {
		case errors.Is(err, kv.ErrNotFound):
			continue
		case err != nil:
			return nil, err
		}
		e.Key = k
		out = append(out, e)
	}
	return out, nil
}

// kickRepair asks the repair loop for a pass now.
func (s *Store) kickRepair() {
	select {
	case s.repairKick <- struct{}{}:
	default:
	}
}
