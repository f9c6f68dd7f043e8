package dualwrite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

// repairLoop verifies the unsettled keys and repairs the dirty ones every
// RepairInterval, each time a breaker closes, and as soon as the fence can
// clear (nextPass).
func (s *Store) repairLoop() {
	for {
		d := s.nextPass()
		s.passAt.Store(s.clock.Now().Add(d).UnixNano())
		t := s.clock.NewTimer(d)
		repair := true
		select {
		case <-t.C():
		case <-s.repairKick:
			t.Stop()
		case <-s.settleKick:
			t.Stop()
			repair = false // a pass that confirms a divergence asks for repair
		case <-s.rearm:
			if t.Stop() { // not fired yet: time the next pass again
				continue
			}
		case <-s.quit:
			t.Stop()
			return
		}
		s.VerifyStageKey(s.bg)
		s.compareHandover(s.bg)
		s.settlePass(s.bg)
		if repair {
			s.repairDirty()
		}
	}
}

// nextPass is how long until the loop's next pass: RepairInterval, or less
// when the handover's full comparison falls due sooner (at once when it is
// due and has not failed), or the window after the latest binding copy's
// write ends (its keys can be verified then).
func (s *Store) nextPass() time.Duration {
	d, now, st := s.cfg.RepairInterval, s.clock.Now(), s.Stage()
	if n, latest := s.set.ingestPending(); n > 0 && (st == Handover || st == Live) {
		if wait := latest.Add(s.cfg.window).Sub(now); wait > 0 {
			d = min(d, wait)
		}
	}
	since := time.Unix(0, s.stageSince.Load())
	if pending, failed := s.handover.pending(since); st == Handover && s.cfg.fence > 0 && pending {
		if wait := s.compareFrom(since).Sub(now); wait > 0 || !failed {
			d = min(d, max(wait, 0))
		}
	}
	return d
}

// untilPass is how long until the loop's next pass, which is what a hold
// that only a pass clears waits; zero while one is due or running.
func (s *Store) untilPass(now time.Time) time.Duration {
	return max(time.Unix(0, s.passAt.Load()).Sub(now), 0)
}

// RepairDirty queues a repair for each dirty key whose last write is older
// than the consistency window, as far as the lanes have room, and returns
// how many it queued (see The settle set); the Store calls it every
// RepairInterval and when a breaker closes. It also asks the Store's loop
// for a verification pass (Settle) now.
func (s *Store) RepairDirty() int {
	n := s.repairDirty()
	s.kickSettle()
	return n
}

func (s *Store) kickSettle() { kick(s.settleKick) }

func (s *Store) repairDirty() int {
	s.gate.RLock()
	n, deferred, free := s.queueRepairs()
	s.gate.RUnlock()
	for _, key := range deferred {
		s.repaired(context.Background(), key, RepairDeferred)
	}
	if !free {
		s.finishRepairs(len(deferred))
	}
	return n
}

func (s *Store) queueRepairs() (n int, deferred []string, free bool) {
	st := s.Stage()
	if s.closed.Load() || !st.mirrors() {
		return 0, nil, true
	}
	target := st.authority().other()
	now := s.clock.Now()
	if s.breakers[target].isOpen(now) {
		return 0, nil, true
	}
	room := int64(len(s.lanes)*s.cfg.LaneDepth) - s.ctr.queued.Load()
	if room <= 0 {
		return 0, nil, true
	}
	refs := s.set.due(MarkDirty, now.Add(-s.cfg.window), int(room), noFleet)
	free = s.dels.pass(len(refs))
	for _, ref := range refs {
		j := job{write: write{op: OpRepair, key: ref.key, hash: hashKey(ref.key), at: now}, target: target, gen: ref.gen, ctx: context.Background(), free: free}
		if s.enqueue(j) {
			n++
		} else {
			s.set.unqueue(ref.key)
			deferred = append(deferred, ref.key)
		}
	}
	return n, deferred, free
}

// runRepair repairs one dirty key from the authoritative store, whose role
// was fixed when the repair was queued (a stage flip drains the lanes
// first), as the package doc's settle set says of Repair.
func (s *Store) runRepair(l *lane, j *job) {
	defer s.set.unqueue(j.key)
	if !j.free {
		defer s.finishRepairs(1)
	}
	start := s.clock.Now()
	if !s.set.ready(j.key, j.gen, start.Add(-s.cfg.window)) {
		// Written since it was queued: the authoritative store may still
		// serve an older value. The next pass takes it. Only this key's
		// own writes count, not those of keys that share its slot.
		s.repaired(j.ctx, j.key, RepairDeferred)
		return
	}
	source := j.target.other()
	if s.expiry[source] == nil {
		s.warnOnce("dualwrite: the authoritative store cannot report expiries, so dirty keys cannot be repaired; run a reconciliation",
			slog.String("role", source.String()))
		s.repaired(j.ctx, j.key, RepairFailed)
		return
	}
	if !s.spend(source, 1) {
		s.repaired(j.ctx, j.key, RepairDeferred) // the primary's budget is spent
		return
	}
	ctx := s.asyncContext(j.ctx, OpRepair)
	var e kv.Entry
	// Its size is not known before the read: allow for the largest.
	err := s.do(l, ctx, start, kv.MaxValueSize, func(ctx context.Context) (err error) {
		e, err = s.get(ctx, source, j.key, readEntry)
		return err
	})
	missing := errors.Is(err, kv.ErrNotFound)
	outcome := RepairFailed
	if err == nil || missing {
		outcome, err = s.repairCopy(l, ctx, j, e, missing)
	}
	end := s.clock.Now()
	s.repaired(ctx, j.key, outcome)
	s.opDone(ctx, j, err, start, end)
}

// spend takes n requests of role's budget without waiting, and reports
// whether it could: a lane never waits for a repair's turn. A repair the
// shadow's budget defers is counted.
func (s *Store) spend(role Role, n int) bool {
	b := s.budgetOf(role)
	if b == nil {
		return true
	}
	for range n {
		if !b.TryTake() {
			if role == RoleShadow {
				s.ctr.paceDeferred.Add(1)
			}
			return false
		}
	}
	return true
}

// repairCopy reads the other store and copies e (or the delete, when
// missing) there if the confirmation rule lets it.
func (s *Store) repairCopy(l *lane, ctx context.Context, j *job, e kv.Entry, missing bool) (RepairOutcome, error) {
	if !s.spend(j.target, 2) { // its read and its write
		return RepairDeferred, nil
	}
	now := s.clock.Now()
	var cur []kv.Entry
	ran, err := s.breakers[j.target].run(now, func() error {
		return s.do(l, ctx, now, int64(len(e.Value)), func(ctx context.Context) (err error) {
			cur, err = s.readOne(ctx, j.target, j.key)
			return err
		})
	})
	switch {
	case !ran:
		return RepairDeferred, err
	case err != nil:
		return RepairFailed, err
	}
	var srcErr error
	if missing {
		srcErr = kv.ErrNotFound
	}
	var obs [2]compare.Observation
	obs[j.target.other()] = observation(e, srcErr, s.withExpiry, s.metadata)
	if len(cur) == 1 {
		obs[j.target] = observation(cur[0], nil, s.withExpiry, s.metadata)
	}
	now = s.clock.Now()
	ref := settleRef{key: j.key, gen: j.gen}
	switch kind := compare.Classify(obs[RolePrimary], obs[RoleShadow], compare.Options{Now: now}); {
	case kind == compare.Match:
		s.dels.forget(j.key)
		if s.set.settle(ref) {
			s.kickCommit()
		}
		return RepairUnneeded, nil
	case !kind.Divergent():
		return RepairDeferred, nil // about to expire on one side: later
	}
	// A repair copies the authoritative value, newer than any copy on its
	// way: it waits on no other instance's watermark.
	v, _ := s.set.judge(ref, s.difference(obs[RolePrimary], obs[RoleShadow], nil, 0), now, rule{window: int64(s.cfg.window), mark: noFleet})
	if v != verdictConfirmed {
		return RepairDeferred, nil
	}
	if !missing {
		s.dels.forget(j.key)
	} else if !s.dels.may(j.key, j.free) {
		return RepairHeld, nil
	}
	var moved bool
	ran, err = s.breakers[j.target].run(now, func() error {
		return s.do(l, ctx, now, int64(len(e.Value)), func(ctx context.Context) (err error) {
			w := write{op: OpPut, key: j.key, value: e.Value, exp: e.Expiration}
			if s.metadata {
				w.md = e.Metadata
			}
			if missing {
				w.op = OpDelete
			}
			moved, err = s.copyTo(ctx, j.target, &w)
			return err
		})
	})
	switch {
	case !ran:
		return RepairDeferred, err
	case err != nil:
		return RepairFailed, err
	}
	end := s.clock.Now()
	if s.set.repaired(j.key, j.gen, end) {
		s.kickCommit()
	}
	if moved {
		s.markDirty(j.key, e.Expiration)
	}
	if missing {
		return RepairDeleted, nil
	}
	return RepairCopied, nil
}

func (s *Store) repaired(ctx context.Context, key string, o RepairOutcome) {
	s.ctr.repair(o)
	s.obs.Repaired(ctx, RepairEvent{Outcome: o, Namespace: kv.ModuleOf(key)})
}

// readOne reads key from store r as readMany does, and alone with its own
// read when a bulk read of it alone is refused as too large (Workers KV: a
// 25 MiB value with metadata).
func (s *Store) readOne(ctx context.Context, r Role, key string) (cur []kv.Entry, err error) {
	many := func(ctx context.Context, keys []string) ([]kv.Entry, error) { return s.readMany(ctx, r, keys) }
	one := func(ctx context.Context, key string) (kv.Entry, error) { return s.get(ctx, r, key, readEntry) }
	split := kv.ReadSplit(ctx, []string{key}, many, one, func(_ []string, got []kv.Entry, rerr error) error {
		cur, err = got, rerr
		return nil
	})
	if split != nil {
		return nil, split
	}
	return cur, err
}

// MaxRepairDeletes is how many keys a Store's repairs delete from the other
// store on their own (see "Repairs never delete in bulk" in the package doc).
const MaxRepairDeletes = 100

// deleteGate keeps repairs from deleting in bulk on their own: a pass of no
// more dirty keys than the deletes left, with none asked before, deletes at
// once (free); any other pass's repairs ask, and once the last has run the
// deletes asked are allowed if they fit in what is left, else held.
type deleteGate struct {
	mu      sync.Mutex
	used    int             // deletes made or allowed since the start or AllowDeletes
	running int             // the asking passes' repairs not finished
	asked   map[string]bool // keys whose repair would delete: undecided, or held
	allowed map[string]bool
	held    bool
}

// pass says whether a pass of n repairs is free; if not, they are counted
// until they finish.
func (g *deleteGate) pass(n int) (free bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if free = !g.held && g.running == 0 && len(g.asked) == 0 && g.used+n <= MaxRepairDeletes; !free {
		g.running += n
	}
	return free
}

// may reports whether a repair deletes key now; otherwise the delete is asked.
func (g *deleteGate) may(key string, free bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.allowed[key]:
		delete(g.allowed, key)
	case free && !g.held && g.used < MaxRepairDeletes:
		g.used++
	default:
		if g.asked == nil {
			g.asked, g.allowed = map[string]bool{}, map[string]bool{}
		}
		g.asked[key] = true
		return false
	}
	return true
}

// finish counts n repairs of asking passes done; after the last, the
// deletes asked are allowed, or held (the count returned).
func (g *deleteGate) finish(n int) (allowed, held int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running -= n; g.running > 0 || g.held || len(g.asked) == 0 {
		return 0, 0
	}
	if g.held = g.used+len(g.asked) > MaxRepairDeletes; g.held {
		return 0, len(g.asked)
	}
	g.used += len(g.asked)
	return g.allow(), 0
}

// allow moves the keys asked to the allowed; the lock is held.
func (g *deleteGate) allow() int {
	n := len(g.asked)
	for k := range g.asked {
		g.allowed[k] = true
	}
	clear(g.asked)
	return n
}

// forget drops key, whose repair is no delete now; a hold whose every key
// was settled otherwise (a reconciliation, the bot's writes) ends.
func (g *deleteGate) forget(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.asked, key)
	delete(g.allowed, key)
	if g.held && len(g.asked) == 0 {
		g.held, g.used = false, 0
	}
}

func (g *deleteGate) heldKeys() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.held {
		return 0
	}
	return len(g.asked)
}

// finishRepairs counts n repairs of asking passes done, and acts on what
// the gate decided: allowed deletes are repaired now, a hold is said.
func (s *Store) finishRepairs(n int) {
	switch allowed, held := s.dels.finish(n); {
	case allowed > 0:
		s.kickRepair()
	case held > 0:
		s.log.Warn(fmt.Sprintf("dualwrite: repairs would delete %d keys from the %s, more than the %d they may delete on their own: "+
			"the deletes are held, their keys stay dirty (which holds a flip), until an operator reconciles the stores (shadow-report --repair --apply) "+
			"or allows them (kvshadow-proxy's POST /repair {\"allow_deletes\":true}; Store.AllowDeletes)",
			held, s.Stage().authority().other(), MaxRepairDeletes))
	}
}

// AllowDeletes allows the deletes held (Stats.DeletesHeld), and
// MaxRepairDeletes more after them, and queues their repairs now; it
// returns how many it allowed.
func (s *Store) AllowDeletes() int {
	s.dels.mu.Lock()
	n := s.dels.allow()
	s.dels.held, s.dels.used = false, 0
	s.dels.mu.Unlock()
	s.RepairDirty()
	return n
}
