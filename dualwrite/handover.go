package dualwrite

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

// StageKey is the key of the primary (the bot's own namespace) where a
// Store in tee mode says that the handover began (see The handover): its
// value is "handover" from before the Store enters Handover until it
// returns to Shadow, when it is deleted.
const StageKey = kv.ReservedPrefix + "stage"

// What the last read of StageKey found (StageKeyStatus.Found; empty
// before the first read).
const (
	KeyUnread     = "unread"     // written on the way into Handover, not read back yet (the flip reads it)
	KeyVerified   = "handover"   // read back as written
	KeyMissing    = "missing"    // read back absent: written again
	KeyDifferent  = "different"  // read back with another value: written again
	KeyUnreadable = "unreadable" // the read failed: the next pass reads again
)

// StageKeyStatus is what the Store knows of StageKey in the primary, in tee
// mode from Handover on (Found is empty otherwise). Rewrites counts the
// reads that found it missing or different, each followed by a rewrite.
type StageKeyStatus struct {
	Found    string `json:"found,omitempty"`
	Rewrites uint64 `json:"rewrites"`
}

// stageKeyCheck is StageKey's state: rewrote is when a rewrite restarted
// the handover's clock (Unix nanoseconds); episode, under stageMu, that
// reads find it wrong (logged when that begins and ends).
type stageKeyCheck struct {
	found    atomic.Pointer[string]
	rewrites atomic.Uint64
	rewrote  atomic.Int64
	episode  bool
}

// Holds reports whether what the last read found holds the flip.
func (k StageKeyStatus) Holds() bool {
	return k.Found == KeyMissing || k.Found == KeyDifferent || k.Found == KeyUnreadable
}

func (c *stageKeyCheck) status() StageKeyStatus {
	st := StageKeyStatus{Rewrites: c.rewrites.Load()}
	if f := c.found.Load(); f != nil {
		st.Found = *f
	}
	return st
}

// markStage writes StageKey before the Store enters Handover from Shadow,
// and deletes it before it returns to Shadow (Workers KV is authoritative
// in both). A Store in proxy mode only (no fence) writes nothing. A
// handover whose key cannot be written does not begin (the error): an
// isolate cut off from the proxy could not know of it. A key that cannot
// be deleted is logged, and the return to Shadow goes on.
func (s *Store) markStage(ctx context.Context, from, to Stage) error {
	if s.cfg.fence <= 0 {
		return nil
	}
	switch {
	case from == Shadow && to == Handover:
		if err := s.writeStageKey(ctx); err != nil {
			return fmt.Errorf("dualwrite: stage %s to %s: writing %s to the primary, which tees cut off from the proxy read: %w", from, to, StageKey, err)
		}
		unread := KeyUnread
		s.key.found.Store(&unread)
		s.kickRepair() // read it back now
	case from == Handover && to == Shadow:
		s.key.found.Store(nil)
		s.key.episode = false
		if err := s.stores[RolePrimary].Delete(ctx, StageKey); err != nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "dualwrite: back in shadow, but "+StageKey+" could not be deleted from the primary: tees cut off from the proxy refuse their calls until it is",
				slog.String("error", compare.ErrorClass(err)))
		}
	}
	return nil
}

// VerifyStageKey reads StageKey back now (see checkStageKey) and returns
// what it found. Package control calls it before it lets the fleet's flip
// go, so that a key changed since the last pass holds the flip on every
// instance.
func (s *Store) VerifyStageKey(ctx context.Context) StageKeyStatus {
	if s.keyOwed() {
		s.stageMu.Lock()
		say := s.checkStageKey(ctx)
		s.stageMu.Unlock()
		say()
	}
	return s.key.status()
}

// keyOwed reports whether StageKey must be in the primary: tee mode, from
// Handover on.
func (s *Store) keyOwed() bool { return s.cfg.fence > 0 && s.Stage() >= Handover }

func (s *Store) writeStageKey(ctx context.Context) (err error) {
	defer s.recovered(RolePrimary, &err)
	return s.stores[RolePrimary].Put(ctx, StageKey, []byte(Handover.String()), kv.PutOptions{})
}

func (s *Store) readStageKey(ctx context.Context) (_ []byte, err error) {
	defer s.recovered(RolePrimary, &err)
	return s.stores[RolePrimary].Get(ctx, StageKey)
}

// checkStageKey reads StageKey back from the primary, in tee mode from
// Handover on (see The handover), and writes a key missing or different
// again; in Handover, but at a Store's first read, that restarts the
// handover's clock. The caller holds stageMu, so that a return to Shadow
// (which deletes the key) is never undone by it, and calls the returned
// func (the log line of an episode's start or end) once it has let go.
func (s *Store) checkStageKey(ctx context.Context) (say func()) {
	if !s.keyOwed() {
		return func() {}
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.ShadowTimeout)
	defer cancel()
	v, err := s.readStageKey(rctx)
	found := KeyVerified
	switch {
	case errors.Is(err, kv.ErrNotFound):
		found, err = KeyMissing, nil
	case err != nil:
		found = KeyUnreadable
	case string(v) != Handover.String():
		found = KeyDifferent
	}
	first := s.key.found.Swap(&found) == nil
	if found == KeyMissing || found == KeyDifferent {
		s.key.rewrites.Add(1)
		if err = s.writeStageKey(rctx); err == nil && s.Stage() == Handover && !first {
			now := s.clock.Now().UnixNano()
			s.stageSince.Store(now)
			s.key.rewrote.Store(now)
		}
	}
	wrong := found != KeyVerified
	if wrong == s.key.episode {
		return func() {}
	}
	s.key.episode = wrong
	attrs := []slog.Attr{slog.String("stage", s.Stage().String()), slog.String("found", found)}
	if err != nil {
		attrs = append(attrs, slog.String("error", compare.ErrorClass(err)))
	}
	level, msg := slog.LevelInfo, "dualwrite: "+StageKey+" reads back from the primary as written again"
	if wrong {
		level, msg = slog.LevelWarn, "dualwrite: "+StageKey+" does not read back from the primary as written (deleted or overwritten outside the proxy, or unreadable): "+
			"it is written again, the flip waits until it reads back, and in handover the fence starts again from the rewrite; logged once until it reads back"
	}
	return func() { s.log.LogAttrs(ctx, level, msg, attrs...) }
}

// withoutReserved drops kvshadow's own keys (kv.ReservedPrefix) from a
// listing page; other excluded prefixes are the bot's, and listed.
func withoutReserved(res kv.ListResult) kv.ListResult {
	j := 0
	for i, k := range res.Keys {
		if strings.HasPrefix(k, kv.ReservedPrefix) {
			continue
		}
		res.Keys[j] = k
		if len(res.Info) == len(res.Keys) {
			res.Info[j] = res.Info[i]
		}
		j++
	}
	if len(res.Info) == len(res.Keys) {
		res.Info = res.Info[:j]
	}
	res.Keys = res.Keys[:j]
	return res
}

// handoverCheck is the state of the full comparison that the fence runs in
// Handover: for which handover (its start, Unix nanoseconds) one finished
// clean, how many keys it found different, and the last failure.
type handoverCheck struct {
	mu       sync.Mutex
	doneFor  int64
	running  bool
	differed int
	err      string
}

// pending reports whether the comparison of the handover that began at
// since has still to finish clean, and whether its last run failed.
func (c *handoverCheck) pending(since time.Time) (pending, failed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.doneFor != since.UnixNano(), c.err != ""
}

// compareFrom is when the full comparison of the handover that began at
// since may start (see The handover: a fence interval and two windows).
func (s *Store) compareFrom(since time.Time) time.Time {
	return since.Add(s.cfg.fence + 2*s.cfg.window)
}

// comparisonHold adds to f what the comparison still holds back in
// Handover: not started yet, running, or failed.
func (s *Store) comparisonHold(f *FenceStatus, since, now time.Time) {
	if s.cfg.fence <= 0 {
		return
	}
	c := &s.handover
	c.mu.Lock()
	done, running, differed, err := c.doneFor == since.UnixNano(), c.running, c.differed, c.err
	c.mu.Unlock()
	f.CompareFrom = s.compareFrom(since)
	if done {
		f.Compared, f.CompareDiffered = true, differed
		return
	}
	var why string
	wait := f.CompareFrom.Sub(now)
	switch {
	case wait > 0:
		why = fmt.Sprintf("the full comparison with Workers KV starts in %s, once no isolate can still write its binding", wait.Round(time.Second))
	case running:
		why, wait = "the full comparison with Workers KV is running", s.untilPass(now)
	case err != "":
		why, wait = "the full comparison with Workers KV failed ("+err+"); it runs again", s.untilPass(now)
	default:
		why, wait = "the full comparison with Workers KV starts at the next pass", s.untilPass(now)
	}
	f.HeldBy = append(f.HeldBy, why)
	f.Remaining = max(f.Remaining, wait)
}

// compareHandover runs the handover's full comparison once it is due (the
// repair loop calls it; see The handover in the package doc).
func (s *Store) compareHandover(ctx context.Context) {
	if s.cfg.fence <= 0 || s.Stage() != Handover {
		return
	}
	since := time.Unix(0, s.stageSince.Load())
	c := &s.handover
	c.mu.Lock()
	due := c.doneFor != since.UnixNano() && !s.clock.Now().Before(s.compareFrom(since))
	c.running = due
	c.mu.Unlock()
	if !due {
		return
	}
	start := s.clock.Now()
	differed, err := s.compareAll(ctx)
	c.mu.Lock()
	c.running = false
	if err != nil {
		c.err = compare.ErrorClass(err)
	} else if s.Stage() == Handover && s.stageSince.Load() == since.UnixNano() {
		c.doneFor, c.differed, c.err = since.UnixNano(), differed, ""
	}
	c.mu.Unlock()
	level, msg := slog.LevelInfo, "dualwrite: the handover's full comparison with Workers KV finished"
	attrs := []slog.Attr{slog.Int("differed", differed), slog.Duration("took", s.clock.Now().Sub(start))}
	if err != nil {
		level, msg = slog.LevelWarn, "dualwrite: the handover's full comparison with Workers KV failed; it runs again at the next pass"
		attrs = append(attrs, slog.String("error", compare.ErrorClass(err)))
	}
	s.log.LogAttrs(ctx, level, msg, attrs...)
	if differed > 0 {
		s.kickSettle()
	}
}

// compareAll walks both stores' listings in key order, reads each batch of
// keys from both and records every key that differs; it returns how many.
func (s *Store) compareAll(ctx context.Context) (int, error) {
	lists := [2]*keyWalk{{ctx: ctx, s: s, r: RolePrimary}, {ctx: ctx, s: s, r: RoleShadow}}
	var batch []string
	differed := 0
	check := func() error {
		if len(batch) == 0 {
			return nil
		}
		var obs [2][]compare.Observation
		for r := range obs {
			err := s.observe(ctx, Role(r), batch, Role(r) == RoleShadow, func(_ []string, o []compare.Observation) error {
				obs[r] = append(obs[r], o...)
				return nil
			})
			if err != nil {
				return err
			}
		}
		now := s.clock.Now()
		for i, key := range batch {
			p, sh := obs[RolePrimary][i], obs[RoleShadow][i]
			if p.Err != nil || sh.Err != nil {
				return fmt.Errorf("reading %d keys: %w", len(batch), cmp.Or(p.Err, sh.Err))
			}
			if compare.Classify(p, sh, compare.Options{Now: now, TTLTolerance: s.cfg.IngestMaxLead}) == compare.Match {
				continue
			}
			differed++
			out := s.markIngested(key, time.Time{}, now, 0)
			s.report(ctx, OpVerify, RoleShadow, out)
		}
		batch = batch[:0]
		return nil
	}
	for {
		a, aok, err := lists[0].peek()
		if err != nil {
			return differed, err
		}
		b, bok, err := lists[1].peek()
		if err != nil {
			return differed, err
		}
		if !aok && !bok {
			return differed, check()
		}
		key := a
		switch {
		case !aok || (bok && b < a):
			key = b
			lists[1].pop()
		case !bok || a < b:
			lists[0].pop()
		default:
			lists[0].pop()
			lists[1].pop()
		}
		if s.excludes(key) { // kvshadow's own, and what the migration leaves out
			continue
		}
		if batch = append(batch, key); len(batch) >= s.cfg.VerifyBatch {
			if err := check(); err != nil {
				return differed, err
			}
		}
	}
}

// keyWalk lists one store, a page at a time.
type keyWalk struct {
	ctx    context.Context
	s      *Store
	r      Role
	page   []string
	cursor string
	done   bool
}

func (w *keyWalk) peek() (string, bool, error) {
	for len(w.page) == 0 && !w.done {
		if err := w.s.waitBudget(w.ctx, w.r, 1); err != nil {
			return "", false, err
		}
		res, err := w.s.list(w.ctx, w.r, kv.ListOptions{Limit: kv.MaxListLimit, Cursor: w.cursor})
		if err != nil {
			return "", false, fmt.Errorf("listing the %s: %w", w.r, err)
		}
		w.page, w.cursor, w.done = res.Keys, res.Cursor, res.Done || res.Cursor == ""
	}
	if len(w.page) == 0 {
		return "", false, nil
	}
	return w.page[0], true, nil
}

func (w *keyWalk) pop() { w.page = w.page[1:] }
