package dualwrite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// Get implements kv.Store: it reads the stage's authoritative store and, for
// a sampled key in the Shadow and Live stages, hands what it read to the
// key's lane for comparison with the other store.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	e, err := s.read(ctx, key, readValue)
	if err != nil {
		return nil, err
	}
	return e.Value, nil
}

// GetEntry implements kv.ExpiryGetter (doc.go, Optional abilities).
func (s *Store) GetEntry(ctx context.Context, key string) (kv.Entry, error) {
	return s.read(ctx, key, readEntry)
}

// GetValue implements kv.MetadataStore: the authoritative store's value and
// expiry by its cheapest read (kv.GetValueEntry), never its metadata. A
// sampled GetValue compares value and expiry, not metadata, so that it
// costs the authoritative store what the caller asked for.
func (s *Store) GetValue(ctx context.Context, key string) (kv.Entry, error) {
	return s.read(ctx, key, readExpiry)
}

// GetMetadata implements kv.MetadataStore: the authoritative store's
// metadata alone, not compared (GetEntry's sampled reads compare metadata).
// When that store keeps none it returns kv.ErrMetadataUnsupported.
func (s *Store) GetMetadata(ctx context.Context, key string) (_ json.RawMessage, err error) {
	if err := kv.ValidateKey(key); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, errClosed
	}
	r := s.Stage().authority()
	ms, ok := s.stores[r].(kv.MetadataStore)
	if !ok {
		return nil, kv.ErrMetadataUnsupported
	}
	defer s.recovered(r, &err)
	return ms.GetMetadata(ctx, key)
}

// readKind is what a read asks of the authoritative store.
type readKind uint8

const (
	readValue  readKind = iota // Get: the value
	readExpiry                 // GetValue: the value and its expiry
	readEntry                  // GetEntry: the value, its expiry and its metadata
)

// readFor is the cheapest read that returns what a comparison looks at.
func readFor(expiry, metadata bool) readKind {
	switch {
	case metadata:
		return readEntry
	case expiry:
		return readExpiry
	}
	return readValue
}

func (s *Store) read(ctx context.Context, key string, kind readKind) (kv.Entry, error) {
	if err := kv.ValidateKey(key); err != nil {
		return kv.Entry{}, err
	}
	if s.closed.Load() {
		return kv.Entry{}, errClosed
	}
	st := s.Stage()
	from := st.authority()
	h := hashKey(key)
	if !st.compares() || !sampled(h, s.threshold) || s.excludedRead(key) {
		return s.get(ctx, from, key, kind)
	}
	seq := s.slotOf(h).seq.Load() // before the read: see comparison.seq
	if kind == readValue && s.withExpiry {
		kind = readEntry // a sampled Get compares all the stores keep
	}
	e, err := s.get(ctx, from, key, kind)
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return e, err // nothing to compare: the caller learns of the error
	}
	c := s.newComparison(e, err == nil, seq)
	c.meta = c.meta && kind == readEntry
	s.offerComparison(ctx, from.other(), key, h, c)
	return e, err
}

// newComparison keeps what a sampled read saw, for its lane.
func (s *Store) newComparison(e kv.Entry, found bool, seq uint64) *comparison {
	c := &comparison{seq: seq, expiry: s.withExpiry, meta: s.metadata}
	c.seen.Found = found
	if found {
		c.seen.Value = bytes.Clone(e.Value)
		if c.expiry {
			c.seen.Expiration = e.Expiration
		}
		if c.meta {
			c.seen.Metadata = bytes.Clone(e.Metadata)
		}
	}
	return c
}

func (s *Store) get(ctx context.Context, r Role, key string, kind readKind) (_ kv.Entry, err error) {
	defer s.recovered(r, &err)
	switch kind {
	case readValue:
		v, err := s.stores[r].Get(ctx, key)
		return kv.Entry{Key: key, Value: v}, err
	case readExpiry:
		if s.expiry[r] != nil {
			return kv.GetValueEntry(ctx, s.stores[r], key)
		}
	default:
		if s.expiry[r] != nil {
			return s.expiry[r].GetEntry(ctx, key)
		}
	}
	return kv.Entry{}, fmt.Errorf("dualwrite: the %s store cannot report expiries: %w", r, errors.ErrUnsupported)
}

// offerComparison queues a comparison on the key's lane, behind the key's
// pending writes, unless the lane is full or the other store's breaker open:
// a comparison is worth less than the caller's time. It reports whether
// the comparison was queued.
func (s *Store) offerComparison(ctx context.Context, target Role, key string, h uint64, c *comparison) (queued bool) {
	if !s.gate.TryRLock() { // a stage flip or Close is under way
		s.ctr.comparisonsSkipped.Add(1)
		return false
	}
	var reason DropReason
	now := s.clock.Now()
	switch {
	case s.closed.Load():
		reason = DropClosed
	case s.breakers[target].isOpen(now):
		reason = DropBreakerOpen
	case !s.enqueue(job{write: write{op: OpCompare, key: key, hash: h, at: now}, target: target, ctx: ctx, cmp: c, size: int64(len(c.seen.Value))}):
		reason = DropLaneFull
	}
	s.gate.RUnlock()
	if reason != "" {
		s.ctr.comparisonsSkipped.Add(1)
		s.obs.Dropped(ctx, DropEvent{Op: OpCompare, Role: target, Reason: reason})
	}
	return reason == ""
}

// Put implements kv.Store. A TTL becomes one absolute expiry in whole
// seconds that both stores receive (see expiryFor).
func (s *Store) Put(ctx context.Context, key string, value []byte, opts kv.PutOptions) error {
	now := s.expiryClock(opts.TTL, opts.Expiration)
	if err := kv.ValidatePut(key, value, opts, now); err != nil {
		return err
	}
	return s.write(ctx, write{op: OpPut, key: key, value: value, exp: expiryFor(opts, now)})
}

// PutEntry implements kv.MetadataStore: e.Value with e.Expiration and
// e.Metadata (doc.go, Optional abilities).
func (s *Store) PutEntry(ctx context.Context, e kv.Entry) error {
	now := s.expiryClock(0, e.Expiration)
	if err := kv.ValidateEntry(e, now); err != nil {
		return err
	}
	if e.Metadata != nil && !s.metadata {
		return errNoMetadata
	}
	return s.write(ctx, write{op: OpPut, key: e.Key, value: e.Value, exp: expiryFor(kv.PutOptions{Expiration: e.Expiration}, now), md: e.Metadata})
}

// expiryClock reads the clock for a write's expiry, which only a TTL or an
// expiration needs: a write without either, validated and stored the same
// at any time, is spared one of the dearer steps of its path.
func (s *Store) expiryClock(ttl time.Duration, exp time.Time) time.Time {
	if ttl == 0 && exp.IsZero() {
		return time.Time{}
	}
	return s.clock.Now()
}

// Delete implements kv.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := kv.ValidateKey(key); err != nil {
		return err
	}
	return s.write(ctx, write{op: OpDelete, key: key})
}

// write is one write on its way through the Store: what was written and
// what its path needs (the key's hash, when it was made and, for an
// ingested copy, when the primary acknowledged it); a lane's job carries it.
type write struct {
	op    Op
	key   string
	hash  uint64
	value []byte
	exp   time.Time       // the absolute expiry; zero means none
	md    json.RawMessage // nil means none
	// at is when the write was made: the clock reading after the
	// authoritative store answered, or when Ingest received a copy. A
	// job's at is when it was offered to its lane; OpEvent.Waited is
	// measured from it.
	at    time.Time
	acked time.Time // an ingested copy: when the primary acknowledged it
}

// entry is w as the stores take a put.
func (w *write) entry() kv.Entry {
	return kv.Entry{Key: w.key, Value: w.value, Expiration: w.exp, Metadata: w.md}
}

// writeOf is the write of a bulk's entry e, whose key hashes to h.
func writeOf(op Op, e kv.Entry, h uint64) write {
	return write{op: op, key: e.Key, hash: h, value: e.Value, exp: e.Expiration, md: e.Metadata}
}

// write applies a write to the authoritative store and enqueues its copy
// (doc.go, Guarantees).
func (s *Store) write(ctx context.Context, w write) error {
	w.hash = hashKey(w.key)
	s.gate.RLock()
	if s.closed.Load() {
		s.gate.RUnlock()
		return errClosed
	}
	st := s.Stage()
	auth := st.authority()
	sl := s.slotOf(w.hash)
	sl.mu.Lock()
	mirrors := st.mirrors() && !s.excluded(w.key) // counted only when written
	sl.seq.Add(1)
	var out markOutcome
	if mirrors {
		out = s.premark(w.key, s.clock.Now())
	}
	err := s.apply(ctx, auth, &w)
	w.at = s.clock.Now()
	sl.touch(w.at)
	if mirrors {
		out.merge(s.afterWrite(ctx, auth.other(), &w, err, false))
	}
	sl.seq.Add(1)
	sl.mu.Unlock()
	s.gate.RUnlock()
	s.report(ctx, w.op, auth.other(), out)
	return err
}

// markOutcome is what a write's bookkeeping under its slot's lock leaves
// to report once the locks are released.
type markOutcome struct {
	reason     DropReason
	overflow   bool // the settle set overflowed: log it
	changed    bool // the journal has something new: wake the committer
	unrecorded bool // the journal's Recorder refused a mark: count it
}

func (o *markOutcome) merge(p markOutcome) {
	o.overflow = o.overflow || p.overflow
	o.changed = o.changed || p.changed
	o.unrecorded = o.unrecorded || p.unrecorded
	if p.reason != "" {
		o.reason = p.reason
	}
}

// premark puts key in the settle set as unsettled, its copy counted,
// before the write reaches the authoritative store, and has the Recorder
// keep the mark at once (doc.go, The settle set). A write that then fails
// cleanly leaves the key unsettled with no copy on its way, for
// verification.
func (s *Store) premark(key string, now time.Time) markOutcome {
	return s.kept(key, MarkUnsettled, s.set.mark(key, MarkUnsettled, now, now, 1, byStore))
}

// kept has the journal's Recorder keep key's new mark m, when out says the
// journal has something new.
func (s *Store) kept(key string, m Mark, out markOutcome) markOutcome {
	if out.changed && s.recorder != nil {
		out.unrecorded = !s.record(key, m)
	}
	return out
}

// apply makes write w on store r: the caller's on the authoritative store,
// or a late copy on MongoDB.
func (s *Store) apply(ctx context.Context, r Role, w *write) (err error) {
	defer s.recovered(r, &err)
	switch {
	case w.op == OpDelete:
		return s.stores[r].Delete(ctx, w.key)
	case w.md != nil:
		return kv.PutEntry(ctx, s.stores[r], w.entry())
	}
	return s.stores[r].Put(ctx, w.key, w.value, kv.PutOptions{Expiration: w.exp})
}

// afterWrite queues the copy of w, which the authoritative store answered
// at w.at with err, or marks the key dirty, before the caller's write
// returns; premark has put the key in the settle set. park: see
// enqueueCopy.
func (s *Store) afterWrite(ctx context.Context, target Role, w *write, err error, park bool) (out markOutcome) {
	failed := false
	if err == nil {
		var fresh bool
		out.reason, fresh = s.mirror(ctx, target, w, park)
		if fresh {
			return out // the copy's worker accounts for it
		}
		failed = out.reason != ""
	} else {
		// The write may have landed (a timeout after the store applied
		// it): let repair copy whatever the store holds.
		failed = uncertain(err)
	}
	out.merge(s.noCopy(w.key, w.at, failed))
	return out
}

// noCopy says that the copy premark counted will not be made; failed
// makes the key dirty, kept by the Recorder.
func (s *Store) noCopy(key string, now time.Time, failed bool) markOutcome {
	return s.kept(key, MarkDirty, s.set.copied(key, now, failed))
}

// copyEnded settles a copy's account in the settle set: the key's copy is
// no longer on its way, and it is dirty if the copy failed.
func (s *Store) copyEnded(j *job, end time.Time, failed bool) {
	s.report(j.ctx, j.op, j.target, s.set.copied(j.key, end, failed))
}

// markDirty marks key dirty, ready at ready, for repair.
func (s *Store) markDirty(key string, ready time.Time) {
	s.report(context.Background(), "", 0, s.set.mark(key, MarkDirty, ready, time.Time{}, 0, byNone))
}

// report counts and reports what a write left to say, outside every lock.
func (s *Store) report(ctx context.Context, op Op, target Role, out markOutcome) {
	if out.unrecorded {
		s.ctr.journalErrors.Add(1)
		s.warnOnce("dualwrite: the settle journal's mark log is full; marks made until its next commit would not survive the process's death")
	}
	if out.reason != "" {
		s.dropped(ctx, op, target, out.reason)
	}
	if out.overflow {
		s.overflowed()
	}
	if out.changed {
		s.kickCommit()
	}
}

// uncertain reports whether a failed authoritative write may nevertheless
// have been applied.
func uncertain(err error) bool { return !excluded(err) && !errors.Is(err, kv.ErrClosed) }

// dropped counts and reports a write that will not reach the other store.
func (s *Store) dropped(ctx context.Context, op Op, target Role, reason DropReason) {
	s.ctr.drop(reason)
	s.obs.Dropped(ctx, DropEvent{Op: op, Role: target, Reason: reason})
}

// overflowed logs, once per raised flag, that the settle set overflowed.
func (s *Store) overflowed() {
	s.log.LogAttrs(context.Background(), slog.LevelWarn,
		"dualwrite: settle set is full; keys beyond it are not tracked, a full reconciliation (shadow-report) is needed",
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
	res = withoutReserved(res)
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
