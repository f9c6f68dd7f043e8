package dualwrite

import (
	"context"
	"slices"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// GetMany implements kv.BulkGetter on the stage's authoritative store
// (doc.go, Optional abilities).
func (s *Store) GetMany(ctx context.Context, keys []string) ([]kv.Entry, error) {
	if err := kv.ValidateKeys(keys); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, errClosed
	}
	st := s.Stage()
	from := st.authority()
	type sample struct {
		key string
		h   uint64
		seq uint64
	}
	var samples []sample
	if st.compares() {
		for _, k := range keys {
			if h := hashKey(k); sampled(h, s.threshold) && !s.excludedRead(k) {
				samples = append(samples, sample{key: k, h: h, seq: s.slotOf(h).seq.Load()})
			}
		}
	}
	entries, err := s.readMany(ctx, from, keys)
	if err != nil || len(samples) == 0 {
		return entries, err
	}
	byKey := make(map[string]int, len(entries))
	for i, e := range entries {
		byKey[e.Key] = i
	}
	for _, sm := range samples {
		i, found := byKey[sm.key]
		var e kv.Entry
		if found {
			e = entries[i]
		}
		s.offerComparison(ctx, from.other(), sm.key, sm.h, s.newComparison(e, found, sm.seq))
	}
	return entries, nil
}

// PutMany implements kv.BulkPutter (doc.go, Optional abilities): every
// key's slot is held from before the authoritative call until its copy is
// queued, as a single Put holds it, the slots taken in a fixed order.
func (s *Store) PutMany(ctx context.Context, entries []kv.Entry) error {
	now := s.clock.Now()
	if err := kv.ValidateEntries(entries, now); err != nil {
		return err
	}
	batch := make([]kv.Entry, len(entries))
	for i, e := range entries {
		if e.Metadata != nil && !s.metadata {
			return errNoMetadata
		}
		e.Expiration = expiryFor(kv.PutOptions{Expiration: e.Expiration}, now)
		batch[i] = e
	}
	return s.writeMany(ctx, OpPut, batch)
}

// DeleteMany implements kv.BulkDeleter as PutMany does PutMany: one
// authoritative call, then each key's delete queued on its lane.
func (s *Store) DeleteMany(ctx context.Context, keys []string) error {
	if err := kv.ValidateKeys(keys); err != nil {
		return err
	}
	batch := make([]kv.Entry, len(keys))
	for i, k := range keys {
		batch[i].Key = k
	}
	return s.writeMany(ctx, OpDelete, batch)
}

func (s *Store) writeMany(ctx context.Context, op Op, batch []kv.Entry) error {
	if len(batch) == 0 {
		return nil
	}
	hashes := make([]uint64, len(batch))
	for i, e := range batch {
		hashes[i] = hashKey(e.Key)
	}
	slots := s.slotIndexes(hashes)
	s.gate.RLock()
	if s.closed.Load() {
		s.gate.RUnlock()
		return errClosed
	}
	st := s.Stage()
	auth := st.authority()
	for _, i := range slots {
		s.slots[i].mu.Lock()
		s.slots[i].seq.Add(1)
	}
	var outs []markOutcome
	var skip []bool // excluded keys: written to the authoritative store alone
	if st.mirrors() {
		outs, skip = make([]markOutcome, len(batch)), make([]bool, len(batch))
		now := s.clock.Now()
		for i, e := range batch {
			if skip[i] = s.excluded(e.Key); !skip[i] {
				outs[i] = s.premark(e.Key, now)
			}
		}
	}
	applied, reached, err := s.applyMany(ctx, auth, op, batch)
	now := s.clock.Now()
	for _, i := range slots {
		s.slots[i].touch(now)
	}
	if st.mirrors() {
		for i, e := range batch {
			w := writeOf(op, e, hashes[i])
			w.at = now
			switch {
			case skip[i]:
			case i < applied:
				outs[i].merge(s.afterWrite(ctx, auth.other(), &w, nil, true))
			case i < reached: // its outcome is the error's
				outs[i].merge(s.afterWrite(ctx, auth.other(), &w, err, true))
			default: // never reached the authoritative store
				outs[i].merge(s.noCopy(e.Key, now, false))
			}
		}
	}
	for _, i := range slices.Backward(slots) {
		s.slots[i].seq.Add(1)
		s.slots[i].mu.Unlock()
	}
	s.gate.RUnlock()
	for _, o := range outs {
		s.report(ctx, op, auth.other(), o)
	}
	return err
}

// slotIndexes returns the slots of hashes, each once, in ascending order:
// the order every bulk takes them in.
func (s *Store) slotIndexes(hashes []uint64) []int {
	idx := make([]int, len(hashes))
	for i, h := range hashes {
		idx[i] = int(h & (1<<slotBits - 1))
	}
	slices.Sort(idx)
	return slices.Compact(idx)
}

// applyMany applies batch to r's store: the keys before applied were
// applied, those from applied to reached met err (which may have landed
// them: a bulk call that fails says nothing of which of its keys it
// applied; nor does a panic), and those from reached on never reached the
// store.
func (s *Store) applyMany(ctx context.Context, r Role, op Op, batch []kv.Entry) (applied, reached int, err error) {
	reached = len(batch) // what a panic leaves: any key may have landed
	defer s.recovered(r, &err)
	switch {
	case op == OpPut && s.puts[r] != nil:
		if err := s.puts[r].PutMany(ctx, batch); err != nil {
			return 0, len(batch), err
		}
		return len(batch), len(batch), nil
	case op == OpDelete && s.deletes[r] != nil:
		keys := make([]string, len(batch))
		for i, e := range batch {
			keys[i] = e.Key
		}
		if err := s.deletes[r].DeleteMany(ctx, keys); err != nil {
			return 0, len(batch), err
		}
		return len(batch), len(batch), nil
	}
	for i, e := range batch {
		w := writeOf(op, e, 0)
		if err := s.apply(ctx, r, &w); err != nil {
			return i, i + 1, err
		}
	}
	return len(batch), len(batch), nil
}

// TeeWrite is a write whose authoritative part was already done elsewhere:
// in tee mode the bot's Worker writes Workers KV through its binding and
// sends the dual-write store a copy of each write to ingest.
type TeeWrite struct {
	Key string
	// Delete makes the write a delete; Value, Expiration and Metadata are
	// then ignored.
	Delete bool
	Value  []byte
	// Expiration is the absolute expiry the primary received; zero means
	// none. An expiry already past makes the copy a delete.
	Expiration time.Time
	// Metadata is the key's Workers KV metadata; nil means none.
	Metadata []byte
	// At is when the primary acknowledged the write (doc.go, The clocks);
	// zero means when Ingest receives it.
	At time.Time
}

// Ingest takes the copies of writes that the primary has already applied
// (tee mode: the bot's Worker wrote its binding). It returns once every
// copy is queued or accounted for; it never waits for the other store.
// Inputs are checked as the contract checks them, before any is taken.
// What becomes of a copy: doc.go, Optional abilities (Ingest), The clocks,
// Forged copies and Late copies. A copy of an excluded key
// (Config.ExcludePrefixes) is dropped and counted (Stats.Excluded). In
// off, where the shadow is not written, Ingest refuses (ErrIngestStage).
func (s *Store) Ingest(ctx context.Context, writes []TeeWrite) error {
	for _, w := range writes {
		if err := validateTee(w); err != nil {
			return err
		}
		if w.Metadata != nil && !w.Delete && !s.metadata {
			return errNoMetadata
		}
	}
	s.gate.RLock()
	if s.closed.Load() {
		s.gate.RUnlock()
		return errClosed
	}
	st := s.Stage()
	if st == Off {
		s.gate.RUnlock()
		return ErrIngestStage
	}
	now := s.clock.Now()
	outs := make([]markOutcome, len(writes))
	var tally ingestTally
	for i, w := range writes {
		at, refused := now, s.credible(st, now)
		if refused == "" {
			at, refused = s.trustAcked(w.At, now)
		}
		switch {
		case s.excludes(w.Key):
			s.ctr.excluded.copies.Add(1) // the binding's alone
		case refused != "":
			s.ctr.refused[refusalIndex[refused]].Add(1)
			tally.refused[refusalIndex[refused]]++
			tally.notable = true
			if refused != RefusedAfterFence { // the full comparison covers those
				outs[i] = s.markIngested(w.Key, time.Time{}, now, 0)
			}
		case st.authority() == RolePrimary:
			s.lastCopy.Store(now.UnixNano())
			outs[i] = s.ingest(ctx, w, at, now)
		default:
			s.lastCopy.Store(now.UnixNano())
			var outcome LateOutcome
			outs[i], outcome = s.late(ctx, st, w, at, now)
			s.ctr.late[lateIndex[outcome]].Add(1)
			tally.late[lateIndex[outcome]]++
			tally.notable = tally.notable || outcome == LateConflict || outcome == LateFailed
		}
	}
	s.gate.RUnlock()
	target := st.authority().other()
	for i, o := range outs {
		s.report(ctx, teeOp(writes[i]), target, o)
	}
	s.logBatch(ctx, tally, len(writes))
	return nil
}

func (s *Store) ingest(ctx context.Context, w TeeWrite, at, now time.Time) (out markOutcome) {
	h := hashKey(w.Key)
	sl := s.slotOf(h)
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.seq.Add(1)
	defer sl.seq.Add(1)
	sl.touch(now)
	if !s.set.newer(w.Key, at) {
		s.ctr.ingestStale.Add(1)
		// Still a binding write the flip must see verified.
		return s.markIngested(w.Key, time.Time{}, now, 0)
	}
	out = s.markIngested(w.Key, at, now, 1)
	reason, fresh := s.mirror(ctx, RoleShadow, w.write(h, at, now), true)
	out.reason = reason
	if !fresh {
		out.merge(s.set.copied(w.Key, now, out.reason != ""))
	}
	return out
}

// markIngested records a binding write of key in the settle set, as
// unsettled, with copies copies queued (acked is its bounded
// acknowledged-at time, zero when it was not applied), and in the
// journal's Recorder before Ingest returns: the primary acknowledged it
// already.
func (s *Store) markIngested(key string, acked, now time.Time, copies int32) markOutcome {
	return s.kept(key, MarkUnsettled, s.set.mark(key, MarkUnsettled, now, acked, copies, byIngest))
}

// write is w as the Store's write paths carry it: its key hashes to h, it
// was acknowledged at acked and received at now.
func (w *TeeWrite) write(h uint64, acked, now time.Time) *write {
	return &write{op: teeOp(*w), key: w.Key, hash: h, value: w.Value, exp: w.Expiration, md: w.Metadata, at: now, acked: acked}
}

func teeOp(w TeeWrite) Op {
	if w.Delete {
		return OpDelete
	}
	return OpPut
}

func validateTee(w TeeWrite) error {
	if err := kv.ValidateKey(w.Key); err != nil {
		return err
	}
	if w.Delete {
		return nil
	}
	if err := kv.ValidateValue(w.Value); err != nil {
		return err
	}
	return kv.ValidateMetadata(w.Metadata)
}
