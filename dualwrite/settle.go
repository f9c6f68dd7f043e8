package dualwrite

import (
	"math"
	"slices"
	"sync"
	"time"
)

// The settle set is one state machine, and this file is all of it. A key is
//
//	absent     not in the set: settled (remembered by its write time, see
//	           pastMark), or never written through the Store
//	suspect    a sampled read found it different, no write of it known here
//	unsettled  written, its copy sent (copies > 0 while on its way), not verified
//	dirty      its copy known lost (queued while its repair waits in a lane)
//
// and an entry of the set also holds held, recovered and flight (see
// settleEntry and fly). Every transition is one method:
//
//	event                      from -> to                                     method
//	a write seen               absent|suspect -> unsettled, dirty stays dirty;  mark
//	                           held cleared; its copies counted
//	a copy ended               copies-1; failed: -> dirty, held cleared        copied
//	loaded from the journal    absent -> unsettled|dirty, recovered            load
//	a sampled read differs     absent -> suspect; the difference held          suspect
//	verified equal             any -> absent                                   settle
//	verified different         held, waiting, or confirmed: -> dirty (a        judge
//	                           suspect joins the set); recovered: -> dirty
//	repair queued, done        dirty: queued, then not                         due, unqueue
//	repaired                   dirty -> unsettled, held cleared                repaired
//	no room                    counted; reconciliation flag up                 full
//	reconciliation done        flag down                                       acknowledge
//
// The rest reads the set, or hands its changes to the journal (take,
// untake, forget). No method calls out.

// Mark is a key's state in the settle set, as the journal keeps it.
type Mark uint8

// The marks the journal keeps.
const (
	// MarkSettled: not in the set; a journal commit removes the key.
	MarkSettled Mark = iota
	// MarkUnsettled: the key's copy was sent, not verified yet.
	MarkUnsettled
	// MarkDirty: the key's copy is known lost; repair copies it.
	MarkDirty
	// markSuspect: a suspect, never journaled.
	markSuspect
)

func (m Mark) String() string {
	switch m {
	case MarkUnsettled:
		return "unsettled"
	case MarkDirty:
		return "dirty"
	}
	return "settled"
}

// settleSet is the settle set and its suspects, bounded by max and maxSus
// (doc.go, The settle set).
type settleSet struct {
	mu        sync.Mutex
	max       int
	keys      map[string]*settleEntry // the set, the suspects and the settled keys remembered
	lines     [4]timeline             // by Mark, by ready time (MarkSettled: by wrote); their counts
	gen       uint64
	overflow  uint64
	reconcile bool
	viaIngest int // keys whose last write came through Ingest (settleEntry.ingested)
	// lastIngest: the latest ready time marked via Ingest (fence estimate).
	lastIngest int64

	maxSus      int
	susOverflow uint64
	superseded  uint64 // suspects a write took into the set

	// free holds up to maxFree entries that left the set, linked by next:
	// in a steady stream of writes a new key costs no allocation.
	free  *settleEntry
	freeN int

	// flights counts the entries in flight by the bucket of the time they
	// went in flight; held the differences held now; recovered the keys
	// loaded from the journal that a verification found different.
	flights   map[int64]int32
	held      int
	recovered uint64

	journaled bool            // changes are kept for a journal
	changes   map[string]Mark // since the committer last took them
	flagMoved bool            // reconcile changed since then

	// lines[MarkSettled] remembers the last maxFree keys that settled with
	// a known write time, their entries kept in keys: past that many, the
	// oldest write is let go, and pastMark is the latest of those let go.
	// An ingested write older than its key's remembered one, or than
	// pastMark, is not applied over the settled one (newer).
	pastMark int64
}

// settleEntry is one key. Times are Unix nanoseconds (see nanos).
type settleEntry struct {
	key        string
	prev, next *settleEntry // in its timeline
	// ready is when the key was last written (or, for a clamped copy,
	// when its original expires; for a held difference, when it was first
	// seen); repair and verification wait the consistency window past it.
	ready int64
	// wrote is the time of the key's latest write as its writer stamped
	// it (the Store's clock for its own writes, the acknowledged-at time
	// for an ingested one), which copies do not move, unlike ready: an
	// ingested write older than it is not applied, a tee's read made
	// before it is inconclusive. Zero after a restart.
	wrote int64
	// gen changes with every write of the key and every change of its
	// mark, so that a repair or a verification that read the stores before
	// them does not settle it.
	gen    uint64
	flight int64 // the bucket (see fly) of the time it went in flight; 0: not
	held   *held // the difference a read found; nil while none is known
	copies int32 // copies queued or running: not verified meanwhile
	mark   Mark
	queued bool // a repair of the key waits in its lane
	// ingested is set while the key's last write came through Ingest, or
	// is unknown (loaded from the journal): the flip waits for its
	// verification.
	ingested bool
	// recovered is set on a key loaded from the journal until a write, a
	// verification or a repair settles it (doc.go, The settle set).
	recovered bool
}

// settleRef names a key as a pass found it.
type settleRef struct {
	key     string
	gen     uint64
	held    bool // a difference was held before this read
	suspect bool
}

// held is a difference between the stores that a read found, and since
// when (Unix ns).
type held struct {
	primary, shadow state
	since           int64
}

func (h *held) same(o held) bool { return h.primary.same(o.primary) && h.shadow.same(o.shadow) }

// verdict is what the confirmation rule makes of a difference just read.
type verdict uint8

const (
	// verdictRaced: written (or gone from the set) since the read began.
	verdictRaced verdict = iota
	// verdictHeld: a difference first seen or changed: the wait restarts.
	verdictHeld
	// verdictWaiting: the same difference, not confirmable yet.
	verdictWaiting
	// verdictConfirmed: confirmed (doc.go, Confirmation).
	verdictConfirmed
	// verdictRecovered: a recovered key differs: dirty, never reported.
	verdictRecovered
)

// rule is what judge needs besides the difference: the window a difference
// must hold for, and the fleet's watermark (Unix ns) sampled before the
// read, which its first sight must precede (noFleet: a Store alone).
type rule struct {
	window int64
	mark   int64
}

const noFleet = math.MaxInt64

func newSettleSet(max, maxSus int, journaled bool) *settleSet {
	d := &settleSet{max: max, keys: make(map[string]*settleEntry), maxSus: maxSus, journaled: journaled, flights: make(map[int64]int32)}
	if journaled {
		d.changes = make(map[string]Mark)
	}
	return d
}

// origin is who made the write a mark records.
type origin uint8

const (
	byNone   origin = iota // no write: a copy known lost
	byStore                // the Store's own write: it knows the value
	byIngest               // a binding write (tee mode), the Store did not make
)

// mark records a write of key at ready in state m (MarkUnsettled or
// MarkDirty), made at wrote (zero: unknown), with copies new copies
// queued. out says whether it overflowed the set and raised the
// reconciliation flag, and whether the journal has something new.
func (d *settleSet) mark(key string, m Mark, ready, wrote time.Time, copies int32, by origin) (out markOutcome) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.keys[key]
	if d.get(key) == nil {
		if d.size() >= d.max {
			out.overflow = d.full()
			out.changed = out.overflow && d.journaled
			return out
		}
		if e == nil || e.mark == MarkSettled {
			e = d.entry(key)
		} else {
			d.superseded++ // a write supersedes what a read suspected
		}
	}
	d.gen++
	e.gen = d.gen
	d.setHeld(e, nil) // a write seen restarts every wait
	if w := nanos(wrote); w > e.wrote {
		e.wrote = w
		e.recovered = false // written since the restart: a write like any other
	}
	e.copies += copies
	if m > e.mark || e.mark == markSuspect {
		d.setMark(e, m, nanos(ready))
		out.changed = d.journaled
	} else {
		d.setReady(e, nanos(ready))
		d.fly(e)
	}
	if by != byNone {
		d.setIngested(e, by == byIngest)
	}
	return out
}

// copied notes that one of key's copies ended at end, failed or not.
func (d *settleSet) copied(key string, end time.Time, failed bool) markOutcome {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.get(key)
	if e == nil {
		return markOutcome{} // its mark overflowed the set, and was counted
	}
	if e.copies > 0 {
		e.copies--
	}
	if failed && e.mark != MarkDirty {
		d.setHeld(e, nil)
		d.setMark(e, MarkDirty, nanos(end))
		return markOutcome{changed: d.journaled}
	}
	d.setReady(e, nanos(end))
	d.fly(e)
	return markOutcome{}
}

// load adds a key from the journal, its last writer unknown (the flip
// waits for its verification), without recording a change.
func (d *settleSet) load(key string, m Mark, ready time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.keys[key] != nil || m == MarkSettled:
		return
	case d.size() >= d.max:
		d.full()
		return
	}
	e := d.entry(key)
	e.ready, e.recovered = nanos(ready), true
	d.setIngested(e, true)
	d.setMark(e, m, e.ready)
	if d.journaled {
		delete(d.changes, key) // the journal has it
	}
}

// suspect notes that a sampled comparison found key different, as diff,
// at now: held by a key of the set, else a suspect (doc.go, The settle set).
func (d *settleSet) suspect(key string, diff held, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.keys[key]
	if e == nil || e.mark == MarkSettled {
		if d.lines[markSuspect].n >= d.maxSus {
			d.susOverflow++
			return
		}
		e = d.entry(key)
		e.ready = nanos(now)
		d.setMark(e, markSuspect, e.ready)
	}
	if e.held == nil || !e.held.same(diff) {
		d.hold(e, diff, nanos(now))
	}
}

// settle removes ref's key, from the set or the suspects, if it was not
// written since ref was taken.
func (d *settleSet) settle(ref settleRef) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.keys[ref.key]
	if e == nil || e.gen != ref.gen {
		return false
	}
	d.drop(e)
	return true
}

// judge applies the confirmation rule (doc.go, Confirmation) to ref's key,
// which a read that began at ref.gen found to differ as diff at now. A
// confirmed difference leaves the key dirty (a suspect joins the set: out
// says whether it overflowed it, and whether the journal has something
// new); a recovered key that is not dirty yet is not judged.
func (d *settleSet) judge(ref settleRef, diff held, now time.Time, r rule) (verdict, markOutcome) {
	d.mu.Lock()
	defer d.mu.Unlock()
	at := nanos(now)
	e := d.keys[ref.key]
	switch {
	case e == nil || e.gen != ref.gen:
		return verdictRaced, markOutcome{}
	case e.recovered && e.mark == MarkUnsettled:
		d.recovered++
		d.setMark(e, MarkDirty, 0)
		return verdictRecovered, markOutcome{changed: d.journaled}
	case e.held == nil || !e.held.same(diff):
		d.hold(e, diff, at)
		return verdictHeld, markOutcome{}
	case at-e.held.since < r.window || e.held.since >= r.mark:
		return verdictWaiting, markOutcome{}
	case e.mark == markSuspect && d.size() >= d.max:
		d.drop(e)
		first := d.full()
		return verdictConfirmed, markOutcome{overflow: first, changed: first && d.journaled}
	case e.mark != MarkDirty:
		d.setMark(e, MarkDirty, 0) // the repair acts on the difference confirmed
		return verdictConfirmed, markOutcome{changed: d.journaled}
	}
	return verdictConfirmed, markOutcome{}
}

// due returns up to limit keys in state m (markSuspect: the suspects), not
// queued for repair, that were ready at or before cutoff; dirty ones are
// marked queued. It walks m's timeline from its oldest entry and stops at
// the first one readied after cutoff: its cost is the keys due, plus those
// skipped (a copy or a repair of theirs on its way, at most what the lanes
// hold, and the differences first seen at or after mark, the fleet's
// watermark, which no read could confirm yet: see judge).
func (d *settleSet) due(m Mark, cutoff time.Time, limit int, mark int64) []settleRef {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := nanos(cutoff)
	var out []settleRef
	for e := d.lines[m].head; e != nil && e.ready <= c && len(out) < limit; e = e.next {
		if e.queued || (m == MarkUnsettled && e.copies != 0) || (e.held != nil && e.held.since >= mark) {
			continue
		}
		if m == MarkDirty {
			e.queued = true
		}
		out = append(out, settleRef{key: e.key, gen: e.gen, held: e.held != nil, suspect: m == markSuspect})
	}
	return out
}

// unqueue notes that key's repair is no longer waiting in a lane.
func (d *settleSet) unqueue(key string) {
	d.mu.Lock()
	if e := d.get(key); e != nil {
		e.queued = false
	}
	d.mu.Unlock()
}

// repaired turns a dirty key not written again since gen into an
// unsettled one, ready at now, verified like any other write.
func (d *settleSet) repaired(key string, gen uint64, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.get(key)
	if e == nil || e.gen != gen {
		return false
	}
	e.recovered = false
	d.setHeld(e, nil)
	d.setMark(e, MarkUnsettled, nanos(now))
	return true
}

// full counts a key the set has no room for and raises the reconciliation
// flag; first reports that it was down.
func (d *settleSet) full() (first bool) {
	d.overflow++
	first = !d.reconcile
	d.reconcile, d.flagMoved = true, d.flagMoved || first
	return first
}

// acknowledge clears the reconciliation flag, if no key overflowed the
// set since its overflow count was n; commit reports that the journal has
// the change to learn.
func (d *settleSet) acknowledge(n uint64) (cleared, commit bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.overflow != n {
		return false, false
	}
	moved := d.reconcile && d.journaled
	d.reconcile = false
	d.flagMoved = d.flagMoved || moved
	return true, moved
}

// The steps the transitions share, under d.mu.

// setMark moves e to mark m, and its ready time to at least ready, keeping
// the counts, the timelines and the journal's changes.
func (d *settleSet) setMark(e *settleEntry, m Mark, ready int64) {
	if e.mark == MarkSettled {
		d.keys[e.key] = e
	} else {
		d.lines[e.mark].remove(e)
	}
	d.gen++
	e.mark, e.gen, e.ready = m, d.gen, max(e.ready, ready)
	d.lines[m].insert(e)
	if d.journaled && m != markSuspect {
		d.changes[e.key] = m
	}
	d.fly(e)
}

// size is how many keys the set holds, suspects aside.
func (d *settleSet) size() int { return d.lines[MarkUnsettled].n + d.lines[MarkDirty].n }

// drop takes e out of the set (or the suspects): settled, remembered by
// its write time if it has one, else on the free list, as is the oldest
// remembered past maxFree (the insertion walks from the newest: keys
// settle mostly in the order of their writes). Nothing else may point to
// it: the refs a pass holds name keys, and no ref has a settled entry's
// gen, 0.
func (d *settleSet) drop(e *settleEntry) {
	if d.journaled && e.mark != markSuspect {
		d.changes[e.key] = MarkSettled
	}
	d.setIngested(e, false)
	d.setHeld(e, nil)
	d.land(e)
	d.lines[e.mark].remove(e)
	*e = settleEntry{key: e.key, ready: e.wrote, wrote: e.wrote}
	if past := &d.lines[MarkSettled]; e.wrote != 0 && (past.n < maxFree || e.wrote > past.head.wrote) {
		if past.insert(e); past.n <= maxFree {
			return
		}
		e = past.head // the oldest write
		past.remove(e)
	}
	d.pastMark = max(d.pastMark, e.wrote)
	delete(d.keys, e.key)
	if d.freeN < maxFree {
		*e = settleEntry{next: d.free}
		d.free, d.freeN = e, d.freeN+1
	}
}

// maxFree bounds the free list and the settled keys remembered: 4,096
// entries each, 320 KiB, besides the remembered keys' bytes and map slots.
const maxFree = 4096

// entry returns a blank entry for key, not in the set yet (MarkSettled)
// until setMark puts it there: its remembered entry, which keeps its
// write time, else one from the free list if it can.
func (d *settleSet) entry(key string) *settleEntry {
	if e := d.keys[key]; e != nil {
		d.lines[MarkSettled].remove(e)
		*e = settleEntry{key: key, wrote: e.wrote}
		return e
	}
	e := d.free
	if e == nil {
		return &settleEntry{key: key}
	}
	d.free, d.freeN = e.next, d.freeN-1
	*e = settleEntry{key: key}
	return e
}

// get returns key's entry in the set, nil for a suspect, a settled or an
// absent key.
func (d *settleSet) get(key string) *settleEntry {
	if e := d.keys[key]; e != nil && (e.mark == MarkUnsettled || e.mark == MarkDirty) {
		return e
	}
	return nil
}

// setReady moves e's ready time to t if that is later.
func (d *settleSet) setReady(e *settleEntry, t int64) {
	if t > e.ready {
		e.ready = t
		d.lines[e.mark].remove(e)
		d.lines[e.mark].insert(e)
	}
}

// hold makes diff, seen at now, e's held difference: the wait starts now.
func (d *settleSet) hold(e *settleEntry, diff held, now int64) {
	diff.since = now
	d.setHeld(e, &diff)
	d.setReady(e, now)
}

// setHeld sets e's held difference, keeping the count of those held.
func (d *settleSet) setHeld(e *settleEntry, h *held) {
	switch {
	case e.held == nil && h != nil:
		d.held++
	case e.held != nil && h == nil:
		d.held--
	}
	e.held = h
}

// setIngested sets the origin of e's last write, and the counts.
func (d *settleSet) setIngested(e *settleEntry, ingested bool) {
	if ingested {
		d.lastIngest = max(d.lastIngest, e.ready)
	}
	if e.ingested != ingested {
		e.ingested = ingested
		if ingested {
			d.viaIngest++
		} else {
			d.viaIngest--
		}
	}
}

// flightBucket is the granularity of the watermark, 2^24 ns (16.8 ms):
// a time in flight is counted in the bucket it falls in, and the
// watermark is the start of the oldest bucket, never later than the time.
const flightBucket = 1 << 24

// fly puts e in flight, or takes it out, as its state says (doc.go,
// Confirmation: what Watermark counts), from the oldest write it knows of
// (its own time, else ready), kept while it stays in flight.
func (d *settleSet) fly(e *settleEntry) {
	in := e.copies > 0 || e.mark == MarkDirty || e.recovered
	switch {
	case in && e.flight == 0:
		t := e.ready
		if e.wrote != 0 && e.wrote < t {
			t = e.wrote
		}
		e.flight = t&^(flightBucket-1) | 1 // nonzero even at the epoch
		d.flights[e.flight]++
	case !in:
		d.land(e)
	}
}

// land takes e out of flight.
func (d *settleSet) land(e *settleEntry) {
	if e.flight == 0 {
		return
	}
	if d.flights[e.flight]--; d.flights[e.flight] <= 0 {
		delete(d.flights, e.flight)
	}
	e.flight = 0
}

// Reading the set.

// watermark returns the oldest time in flight, or now (read under the
// lock: a write marked after it reaches the authoritative store after it)
// when nothing is. Its cost is one look at each bucket in flight.
func (d *settleSet) watermark(now func() time.Time) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.flights) == 0 {
		return now()
	}
	low := int64(math.MaxInt64)
	for b := range d.flights {
		low = min(low, b&^1)
	}
	return timeOf(low)
}

// newer reports whether an ingested write acknowledged at acked is newer
// than every write the set knows of for key, the settled ones included: a
// key's known write is its latest (a write let go from the set before it
// was at most pastMark then), pastMark stands for an unknown one.
func (d *settleSet) newer(key string, acked time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	w := d.pastMark
	if e := d.keys[key]; e != nil && e.wrote != 0 {
		w = e.wrote
	}
	return w <= nanos(acked)
}

// lastWrite returns the key's ready time and whether it is dirty.
func (d *settleSet) lastWrite(key string) (last time.Time, dirty, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.get(key); e != nil {
		return timeOf(e.ready), e.mark == MarkDirty, true
	}
	return time.Time{}, false, false
}

// wroteAt returns the time of the key's latest write as its writer stamped
// it; ready instead when that is unknown (loaded from the journal), which
// is later.
func (d *settleSet) wroteAt(key string) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.get(key)
	switch {
	case e == nil:
		return time.Time{}, false
	case e.wrote == 0:
		return timeOf(e.ready), true
	}
	return timeOf(e.wrote), true
}

// ready reports whether key is still at gen and its last write at or
// before cutoff: a repair made now cannot race a newer write.
func (d *settleSet) ready(key string, gen uint64, cutoff time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.get(key)
	return e != nil && e.gen == gen && e.ready <= nanos(cutoff)
}

func (d *settleSet) snapshot() (dirty, unsettled int, overflow uint64, reconcile bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lines[MarkDirty].n, d.lines[MarkUnsettled].n, d.overflow, d.reconcile
}

// counts fills st's counts of the set.
func (d *settleSet) counts(st *Stats) {
	d.mu.Lock()
	defer d.mu.Unlock()
	st.Dirty, st.Unsettled, st.DirtyOverflow, st.ReconciliationNeeded = d.lines[MarkDirty].n, d.lines[MarkUnsettled].n, d.overflow, d.reconcile
	st.Suspects, st.SuspectOverflow, st.SuspectsSuperseded = d.lines[markSuspect].n, d.susOverflow, d.superseded
	st.Held, st.Recovered, st.JournalPending = d.held, d.recovered, len(d.changes)
}

// ingestPending counts the keys whose last write came through Ingest, and
// returns the latest time one was marked so (an estimate that may be later
// than the latest of those still in the set, never earlier).
func (d *settleSet) ingestPending() (n int, latest time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.viaIngest == 0 {
		return 0, time.Time{}
	}
	return d.viaIngest, timeOf(d.lastIngest)
}

// list returns the keys in state m, in byte order.
func (d *settleSet) list(m Mark) []string {
	var out []string
	d.mu.Lock()
	for e := d.lines[m].head; e != nil; e = e.next {
		out = append(out, e.key)
	}
	d.mu.Unlock()
	slices.Sort(out)
	return out
}

// The journal's side.

// take hands the committer the changes made since it last took them.
func (d *settleSet) take() (changes map[string]Mark, reconcile, flagMoved bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	changes, reconcile, flagMoved = d.changes, d.reconcile, d.flagMoved
	if len(changes) > 0 {
		d.changes = make(map[string]Mark, len(changes))
	} else {
		changes = nil // the set keeps writing its own map
	}
	d.flagMoved = false
	return changes, reconcile, flagMoved
}

// untake gives back changes a commit failed to make, under the ones made
// since.
func (d *settleSet) untake(changes map[string]Mark, flagMoved bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, m := range changes {
		if _, newer := d.changes[k]; !newer {
			d.changes[k] = m
		}
	}
	d.flagMoved = d.flagMoved || flagMoved
}

// forget has the journal drop key, which it holds but the set does not
// take (an excluded key): its removal goes with the next commit.
func (d *settleSet) forget(key string) {
	d.mu.Lock()
	if d.journaled {
		d.changes[key] = MarkSettled
	}
	d.mu.Unlock()
}

// timeline lists entries by ready time, oldest first, so the entries due
// by a cutoff are found from its head. A write readies its key at the
// clock's now, so an insertion walks back from the tail: O(1) usually.
type timeline struct {
	head, tail *settleEntry
	n          int // entries
}

// insert places e by its ready time, after the entries readied at the
// same time.
func (t *timeline) insert(e *settleEntry) {
	t.n++
	at := t.tail
	for at != nil && at.ready > e.ready {
		at = at.prev
	}
	e.prev = at
	if at == nil {
		e.next, t.head = t.head, e
	} else {
		e.next, at.next = at.next, e
	}
	if e.next != nil {
		e.next.prev = e
	} else {
		t.tail = e
	}
}

func (t *timeline) remove(e *settleEntry) {
	t.n--
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		t.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		t.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

// nanos is t as the set keeps times: Unix nanoseconds, 0 for the zero
// time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// timeOf undoes nanos.
func timeOf(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}
