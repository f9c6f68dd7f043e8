package dualwrite

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

// StageKey is the key of the primary (the bot's own namespace) where a
// Store in tee mode (a positive FenceInterval) says that the handover began:
// its value is "handover" from before the Store enters Handover until it
// returns to Shadow, when it is deleted. A tee that cannot learn the stage
// from the proxy reads it from its binding, and never serves its binding
// once it says so.
const StageKey = kv.ReservedPrefix + "stage"

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
	case from == Handover && to == Shadow:
		s.marked.Store(false)
		if err := s.stores[RolePrimary].Delete(ctx, StageKey); err != nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "dualwrite: back in shadow, but "+StageKey+" could not be deleted from the primary: tees cut off from the proxy refuse their calls until it is",
				slog.String("error", compare.ErrorClass(err)))
		}
	}
	return nil
}

// writeStageKey writes StageKey to the primary and notes that it is there.
func (s *Store) writeStageKey(ctx context.Context) error {
	if err := s.stores[RolePrimary].Put(ctx, StageKey, []byte(Handover.String()), kv.PutOptions{}); err != nil {
		return err
	}
	s.marked.Store(true)
	return nil
}

// mustMark reports whether StageKey is owed: tee mode, a stage from
// Handover on, and the key not written by this Store yet.
func (s *Store) mustMark() bool {
	return s.cfg.fence > 0 && s.Stage() >= Handover && !s.marked.Load()
}

// markBegun writes StageKey when the Store is past Shadow without having
// written it: SetStage writes it on the way into Handover, but a Store that
// began in Handover or later (the first instance started there, or one
// restarted after the key was deleted behind the fleet's back) must not
// leave an isolate cut off from the proxy reading a binding that says
// nothing, which it would serve as authoritative. The repair loop calls
// it, at once after New and then every RepairInterval until the key is
// written; a failure is logged once, and holds the flip (fenceAt). It runs
// under stageMu, as SetStage does, so that a return to Shadow (which
// deletes the key) is never undone by it.
func (s *Store) markBegun(ctx context.Context) {
	if !s.mustMark() {
		return
	}
	s.stageMu.Lock()
	defer s.stageMu.Unlock()
	if !s.mustMark() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ShadowTimeout)
	defer cancel()
	err := s.writeStageKey(ctx)
	switch {
	case err != nil && !s.markFailed:
		s.markFailed = true
		s.log.LogAttrs(ctx, slog.LevelWarn, "dualwrite: "+StageKey+" cannot be written to the primary: tees cut off from the proxy serve their binding until it is; retrying every repair interval",
			slog.String("stage", s.Stage().String()), slog.String("error", compare.ErrorClass(err)))
	case err == nil && s.markFailed:
		s.markFailed = false
		s.log.LogAttrs(ctx, slog.LevelInfo, "dualwrite: "+StageKey+" written to the primary", slog.String("stage", s.Stage().String()))
	}
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

// compareFrom is when the full comparison of the handover that began at
// since may start: after the last moment an isolate could still write its
// binding (the fence interval covers a lease and an invocation; an
// isolate cut off from the proxy reads StageKey, which Workers KV may show
// a consistency window late), and after that write is visible to a read
// of Workers KV (another window).
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
		why, wait = "the full comparison with Workers KV is running", s.cfg.RepairInterval
	case err != "":
		why, wait = "the full comparison with Workers KV failed ("+err+"); it runs again", s.cfg.RepairInterval
	default:
		why, wait = "the full comparison with Workers KV starts at the next pass", s.cfg.RepairInterval
	}
	f.HeldBy = append(f.HeldBy, why)
	f.Remaining = max(f.Remaining, wait)
}

// compareHandover runs the handover's full comparison once it is due (the
// repair loop calls it): every key of either store whose value, expiry or
// metadata differ is recorded as last written by a binding copy, so that
// the fence holds the flip until verification finds it equal, repairing it
// toward Workers KV, authoritative until the flip.
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
				return fmt.Errorf("reading %d keys: %w", len(batch), firstErr(p.Err, sh.Err))
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

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
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
