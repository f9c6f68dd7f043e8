package dualwrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

// Get implements kv.Store: it reads the stage's authoritative store and, for
// a sampled key in the Shadow and Live stages, hands what it read to the
// key's lane for comparison with the other store.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	e, err := s.read(ctx, key, false)
	if err != nil {
		return nil, err
	}
	return e.Value, nil
}

// GetEntry implements kv.ExpiryGetter by reading the authoritative store's
// GetEntry. When that store lacks the ability it returns an error matching
// errors.ErrUnsupported.
func (s *Store) GetEntry(ctx context.Context, key string) (kv.Entry, error) {
	return s.read(ctx, key, true)
}

func (s *Store) read(ctx context.Context, key string, entry bool) (kv.Entry, error) {
	if err := kv.ValidateKey(key); err != nil {
		return kv.Entry{}, err
	}
	if s.closed.Load() {
		return kv.Entry{}, errClosed
	}
	st := s.Stage()
	from := st.authority()
	h := hashKey(key)
	if !st.compares() || !sampled(h, s.threshold) {
		return s.get(ctx, from, key, entry)
	}
	withExpiry := s.expiry[RolePrimary] != nil && s.expiry[RoleShadow] != nil
	seq := s.slotOf(h).seq.Load() // before the read: see comparison.seq
	e, err := s.get(ctx, from, key, entry || withExpiry)
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return e, err // nothing to compare: the caller learns of the error
	}
	seen := compare.Observation{Found: err == nil}
	if seen.Found {
		seen.Value = bytes.Clone(e.Value)
		if withExpiry {
			seen.Expiration = e.Expiration
		}
	}
	s.offerComparison(ctx, from.other(), key, h, &comparison{seen: seen, seq: seq, expiry: withExpiry})
	return e, err
}

func (s *Store) get(ctx context.Context, r Role, key string, entry bool) (_ kv.Entry, err error) {
	defer s.recovered(r, &err)
	if !entry {
		v, err := s.stores[r].Get(ctx, key)
		return kv.Entry{Key: key, Value: v}, err
	}
	if s.expiry[r] == nil {
		return kv.Entry{}, fmt.Errorf("dualwrite: the %s store cannot report expiries: %w", r, errors.ErrUnsupported)
	}
	return s.expiry[r].GetEntry(ctx, key)
}

// offerComparison queues a comparison on the key's lane, behind the key's
// pending writes, unless the lane is full or the other store's breaker open:
// a comparison is worth less than the caller's time.
func (s *Store) offerComparison(ctx context.Context, target Role, key string, h uint64, c *comparison) {
	if !s.gate.TryRLock() { // a stage flip or Close is under way
		s.ctr.comparisonsSkipped.Add(1)
		return
	}
	var reason DropReason
	now := s.clock.Now()
	switch {
	case s.closed.Load():
		reason = DropClosed
	case s.breakers[target].isOpen(now):
		reason = DropBreakerOpen
	case !s.enqueue(job{op: OpCompare, target: target, key: key, hash: h, ctx: ctx, cmp: c, size: int64(len(c.seen.Value)), queued: now}):
		reason = DropLaneFull
	}
	s.gate.RUnlock()
	if reason != "" {
		s.ctr.comparisonsSkipped.Add(1)
		s.obs.Dropped(ctx, DropEvent{Op: OpCompare, Role: target, Reason: reason})
	}
}

// Put implements kv.Store. A TTL becomes one absolute expiry in whole
// seconds that both stores receive (see expiryFor).
func (s *Store) Put(ctx context.Context, key string, value []byte, opts kv.PutOptions) error {
	now := s.clock.Now()
	if err := kv.ValidatePut(key, value, opts, now); err != nil {
		return err
	}
	return s.write(ctx, OpPut, key, value, expiryFor(opts, now))
}

// Delete implements kv.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := kv.ValidateKey(key); err != nil {
		return err
	}
	return s.write(ctx, OpDelete, key, nil, time.Time{})
}

// write applies a write to the authoritative store and enqueues its copy.
// The caller gets the authoritative store's result and never waits for the
// other store.
func (s *Store) write(ctx context.Context, op Op, key string, value []byte, exp time.Time) error {
	h := hashKey(key)
	s.gate.RLock()
	if s.closed.Load() {
		s.gate.RUnlock()
		return errClosed
	}
	st := s.Stage()
	auth := st.authority()
	sl := s.slotOf(h)
	sl.mu.Lock()
	sl.seq.Add(1)
	err := s.apply(ctx, auth, op, key, value, exp)
	now := s.clock.Now()
	sl.touch(now)
	var reason DropReason
	var overflow bool
	if st.mirrors() {
		switch {
		case err == nil:
			reason, overflow = s.mirror(ctx, auth.other(), op, key, h, value, exp, now)
		case uncertain(err):
			// The write may have landed (a timeout after the store
			// applied it): let repair copy whatever the store holds.
			overflow = s.dirty.mark(key, now)
		}
	}
	sl.seq.Add(1)
	sl.mu.Unlock()
	s.gate.RUnlock()
	if reason != "" {
		s.dropped(ctx, op, auth.other(), reason)
	}
	if overflow {
		s.overflowed()
	}
	return err
}

// apply makes the caller's write on the authoritative store r.
func (s *Store) apply(ctx context.Context, r Role, op Op, key string, value []byte, exp time.Time) (err error) {
	defer s.recovered(r, &err)
	if op == OpPut {
		return s.stores[r].Put(ctx, key, value, kv.PutOptions{Expiration: exp})
	}
	return s.stores[r].Delete(ctx, key)
}

// mirror enqueues the copy of a write that the authoritative store accepted,
// or marks the key dirty when it cannot.
func (s *Store) mirror(ctx context.Context, target Role, op Op, key string, h uint64, value []byte, exp, now time.Time) (DropReason, bool) {
	if s.breakers[target].isOpen(now) {
		return DropBreakerOpen, s.dirty.mark(key, now)
	}
	j := job{op: op, target: target, key: key, hash: h, exp: exp, ctx: ctx, queued: now}
	if op == OpPut {
		// The caller may reuse its buffer once Put returns.
		j.value = append(make([]byte, 0, len(value)), value...)
		j.size = int64(len(value))
	}
	if !s.enqueue(j) {
		return DropLaneFull, s.dirty.mark(key, now)
	}
	return "", false
}

// uncertain reports whether a failed authoritative write may nevertheless
// have been applied.
func uncertain(err error) bool { return !excluded(err) && !errors.Is(err, kv.ErrClosed) }

// dropped counts and reports a write that will not reach the other store.
func (s *Store) dropped(ctx context.Context, op Op, target Role, reason DropReason) {
	s.ctr.drop(reason)
	s.obs.Dropped(ctx, DropEvent{Op: op, Role: target, Reason: reason})
}

// overflowed logs, once per raised flag, that the dirty set overflowed.
func (s *Store) overflowed() {
	s.log.LogAttrs(context.Background(), slog.LevelWarn,
		"dualwrite: dirty key set is full; keys beyond it are not tracked, a full reconciliation (shadow-report) is needed",
		slog.Int("max_dirty", s.cfg.MaxDirty))
}

// List implements kv.Store on the stage's authoritative store. Its cursor
// names the store that issued it, so a listing that began before a stage
// change ends on the store where it began rather than failing.
func (s *Store) List(ctx context.Context, opts kv.ListOptions) (kv.ListResult, error) {
	if _, err := kv.ValidateListOptions(opts); err != nil {
		return kv.ListResult{}, err
	}
	if s.closed.Load() {
		return kv.ListResult{}, errClosed
	}
	from := s.Stage().authority()
	inner := ""
	if opts.Cursor != "" {
		var ok bool
		if from, inner, ok = openCursor(opts.Cursor); !ok {
			return kv.ListResult{}, fmt.Errorf("%w: not issued by a dual-write store", kv.ErrInvalidCursor)
		}
	}
	res, err := s.list(ctx, from, kv.ListOptions{Prefix: opts.Prefix, Limit: opts.Limit, Cursor: inner})
	if err != nil {
		return kv.ListResult{}, err
	}
	if res.Cursor != "" {
		res.Cursor = cursorTags[from] + res.Cursor
	}
	return res, nil
}

func (s *Store) list(ctx context.Context, r Role, opts kv.ListOptions) (_ kv.ListResult, err error) {
	defer s.recovered(r, &err)
	return s.stores[r].List(ctx, opts)
}

var cursorTags = [2]string{"d1p.", "d1s."}

func openCursor(c string) (Role, string, bool) {
	for r, tag := range cursorTags {
		if inner, ok := strings.CutPrefix(c, tag); ok && inner != "" {
			return Role(r), inner, true
		}
	}
	return 0, "", false
}
