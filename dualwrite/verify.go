package dualwrite

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

// Settle runs one verification pass now (doc.go, The settle set and
// Confirmation) and returns how many keys it compared; a read error, a
// write racing the read or a key about to expire leaves the key for the
// next pass. Passes never run together, so a Sink or an Observer, which a
// pass calls, must not call Settle.
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
	refs := append(s.set.due(MarkUnsettled, cutoff, s.cfg.MaxDirty, r.mark), s.set.due(markSuspect, cutoff, s.cfg.MaxSuspects, r.mark)...)
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

// verify compares one batch of keys across both stores: the authoritative
// store through kv.ReadSplit (sizes are unknown before the read), then
// each answer from the other store in reads cut by the sizes it returned
// (bySize), so a pass holds about two answers' values at a time.
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
// seqs before the reads, and settles, holds or confirms each key by rule r
// (doc.go, Confirmation). A key confirmed or recovered is counted apart,
// and verified as Pending: a repair of it is under way.
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
			v, o := s.set.judge(ref, diff, now, r)
			out.merge(o)
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
// pass. Each request waits on r's budget, under a timeout that allows for
// its bytes, and through r's breaker when guarded.
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
func (s *Store) kickRepair() { kick(s.repairKick) }

// state is one store's state of a key as the confirmation rule compares it
// (doc.go, Confirmation): two reads with the same state saw the same write
// (or absence). Expiry is in whole seconds: Workers KV keeps no finer.
type state struct {
	found  bool
	meta   bool // md is known: a tee's read carries no metadata
	length int
	exp    int64 // Unix seconds; 0 means none
	md     uint64
	sum    [32]byte
}

// keyStateOf reduces an observation to its state; sum is the SHA-256 of its
// value when the caller has it already (a tee's digest), nil to compute it.
func keyStateOf(o compare.Observation, sum *[32]byte, length int, meta bool) state {
	st := state{found: o.Found, meta: meta}
	if !o.Found {
		return st
	}
	if sum != nil {
		st.sum, st.length = *sum, length
	} else {
		st.sum, st.length = sha256.Sum256(o.Value), len(o.Value)
	}
	if !o.Expiration.IsZero() {
		st.exp = o.Expiration.Unix()
	}
	if meta && o.Metadata != nil {
		h := fnv.New64a()
		h.Write(o.Metadata)
		st.md = h.Sum64() | 1 // nonzero: some metadata
	}
	return st
}

func (a state) same(b state) bool {
	if a.found != b.found || a.length != b.length || a.exp != b.exp || a.sum != b.sum {
		return false
	}
	return !a.meta || !b.meta || a.md == b.md
}

// Fleet is what a Store learns of the other instances, each with a Store of
// its own over the same two stores (package control's Fleet, from their
// heartbeats). See Confirmation in the package doc.
type Fleet interface {
	// Watermark returns a time before which no other live instance has a
	// write on its way to the other store: each published, with a
	// heartbeat made since, a Watermark of its own Store past it. The
	// zero time while nothing is known (the Store then confirms nothing).
	Watermark(ctx context.Context) time.Time
	// Claim records that this instance reports the difference named by
	// id, unless another instance did within hold: first is false then,
	// and the difference is not reported twice. An error leaves it to be
	// reported (better twice than never).
	Claim(ctx context.Context, id [32]byte, hold time.Duration) (first bool, err error)
}

// Watermark returns the low watermark this Store publishes to the other
// instances (doc.go, Confirmation), rounded down to 16.8 ms.
func (s *Store) Watermark() time.Time { return s.set.watermark(s.clock.Now) }

// fleetMark samples the fleet's watermark for a verification pass, before
// its reads: noFleet without a Fleet, 0 (confirm nothing) when unknown.
func (s *Store) fleetMark(ctx context.Context) int64 {
	if s.cfg.Fleet == nil {
		return noFleet
	}
	t := s.cfg.Fleet.Watermark(ctx)
	if t.IsZero() {
		return 0
	}
	return nanos(t)
}

// claimHold is how long, in consistency windows, a claim keeps another
// instance from reporting the same difference: long enough for the
// reporter's repair (a window after the confirmation at most), short
// enough that a difference that outlives it, or comes back, is reported
// again.
const claimHold = 4

// claim asks the Fleet whether this instance is the first to report the
// difference diff of key: its ID is a SHA-256 of the key and both sides'
// states, never the key itself.
func (s *Store) claim(ctx context.Context, key string, diff held) bool {
	if s.cfg.Fleet == nil {
		return true
	}
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(key)))
	h.Write(n[:])
	h.Write([]byte(key))
	for _, st := range []state{diff.primary, diff.shadow} {
		var b [1 + 8 + 8 + 8]byte
		if st.found {
			b[0] = 1
		}
		binary.BigEndian.PutUint64(b[1:], uint64(st.length))
		binary.BigEndian.PutUint64(b[9:], uint64(st.exp))
		binary.BigEndian.PutUint64(b[17:], st.md)
		h.Write(b[:])
		h.Write(st.sum[:])
	}
	var id [32]byte
	h.Sum(id[:0])
	first, err := s.cfg.Fleet.Claim(ctx, id, claimHold*s.cfg.window)
	if err != nil {
		s.ctr.claimErrors.Add(1)
		return true
	}
	return first
}
