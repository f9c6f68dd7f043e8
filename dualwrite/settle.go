package dualwrite

import (
	"sync"
	"time"
)

// Mark is a key's state in the settle set, as the journal keeps it.
type Mark uint8

// The marks. A key leaves the set (MarkSettled) only when a verification
// read made after the consistency window found both stores equal.
const (
	// MarkSettled: the key is not in the set; in a journal commit, remove
	// it.
	MarkSettled Mark = iota
	// MarkUnsettled: the key's copy was sent to the other store and has
	// not been verified yet.
	MarkUnsettled
	// MarkDirty: the key's copy is known lost (dropped, failed, or the
	// authoritative write's outcome was in doubt); repair copies it.
	MarkDirty
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

// settleSet holds every key whose copy in the other store is not known to
// be right: dirty keys and unsettled keys are two states of one set. It is
// bounded: past max keys it only counts, and raises the flag that a full
// reconciliation is needed. Every change a journal must learn is kept in
// changes until the committer takes it. Its methods never call out.
//
// Beside it, under the same lock, sus holds the keys that only a sampled
// read found different (the Store's own reads or a tee's): a bounded set of
// its own, never journaled, whose overflow is counted and dropped, so that
// reads, which anyone can send for any key, never take a slot meant for
// writes nor raise the reconciliation flag. A suspect whose difference is
// confirmed joins the settle set, dirty, for repair.
type settleSet struct {
	mu        sync.Mutex
	max       int
	keys      map[string]*settleEntry
	lines     [3]timeline // by Mark: the unsettled and the dirty keys, by ready time
	gen       uint64
	overflow  uint64
	reconcile bool
	dirty     int // keys in MarkDirty
	viaIngest int // keys whose last write came through Ingest (settleEntry.ingested)
	// lastIngest is the latest ready time of a key marked as written
	// through Ingest: the fence's estimate, kept without a scan.
	lastIngest int64

	maxSus      int
	sus         map[string]*settleEntry
	susLine     timeline
	susOverflow uint64
	// superseded counts the suspects that a write through the Store took
	// into the set before a verification read confirmed or cleared them.
	superseded uint64

	// free holds up to maxFree entries that left the set, linked by
	// next, for the keys that enter it next: in a steady stream of writes
	// a new key costs no allocation, and a burst leaves little behind.
	free  *settleEntry
	freeN int

	// flights counts the entries in flight (see fly) by the bucket of
	// the time they went in flight: the Store's low watermark is the
	// oldest bucket. held counts the entries (and suspects) holding a
	// difference now; recovered the keys loaded from the journal that a
	// verification found different, repaired without a report.
	flights   map[int64]int32
	held      int
	recovered uint64

	journaled bool            // changes are kept for a journal
	changes   map[string]Mark // since the committer last took them
	flagMoved bool            // reconcile changed since then
}

// settleEntry is one key of the set (or of the suspects). Times are Unix
// nanoseconds (see nanos): 88 bytes an entry, plus the map's own.
type settleEntry struct {
	key        string
	prev, next *settleEntry // in its timeline
	// ready is when the key was last written (or, for a clamped copy,
	// when its original expires; for a held difference, when it was first
	// seen); repair and verification wait the consistency window past it.
	ready int64
	// wrote is the time of the key's latest write as its writer stamped
	// it (the Store's clock for its own writes, the acknowledged-at time
	// for an ingested one), unlike ready, which copies move on: a tee's
	// read made before it is inconclusive. Zero after a restart.
	wrote int64
	// acked is the latest acknowledged-at time of an ingested write, so
	// that an older one arriving later is not applied over it.
	acked int64
	// gen changes with every write of the key and every change of its
	// mark, so that a repair or a verification that read the stores before
	// a newer write does not settle it.
	gen uint64
	// copies counts the key's copies queued or running: a key is not
	// verified while its own copy is on its way.
	copies int32
	mark   Mark
	// queued is set while a repair of the key waits in its lane, so that
	// a second pass does not queue it twice.
	queued bool
	// ingested is set while the key's last write came through Ingest (a
	// binding write the Store did not make itself), or is unknown (loaded
	// from the journal): the flip waits until such a key is verified.
	ingested bool
	// held is the difference a read found and the confirmation rule waits
	// on; nil while none is known. A write of the key clears it (setHeld).
	held *held
	// flight is the bucket (see flightBucket) of the time the key went in
	// flight: a copy queued or running, dirty, or recovered and not yet
	// verified; 0 while it is not (see fly).
	flight int64
	// recovered is set on a key loaded from the journal until a write,
	// a verification or a repair settles what it is: a difference found
	// then is a copy that may have died with the process, repaired as
	// dirty and never reported.
	recovered bool
}

type settleRef struct {
	key     string
	gen     uint64
	held    bool // a difference was held before this read
	suspect bool // the key is in the suspects, not the settle set
}

func newSettleSet(max, maxSus int, journaled bool) *settleSet {
	d := &settleSet{max: max, keys: make(map[string]*settleEntry), maxSus: maxSus, sus: make(map[string]*settleEntry), journaled: journaled, flights: make(map[int64]int32)}
	if journaled {
		d.changes = make(map[string]Mark)
	}
	return d
}

// mark records a write of key at ready in state m (MarkUnsettled or
// MarkDirty), with copies new copies queued; a dirty key stays dirty until
// repaired. wrote is the write's own time, zero when the mark is no write.
// first reports that this mark overflowed the set and raised the
// reconciliation flag; changed that the journal has something new to
// commit.
func (d *settleSet) mark(key string, m Mark, ready, wrote time.Time, copies int32) (first, changed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, first, changed := d.markLocked(key, m, ready, wrote, copies)
	if !wrote.IsZero() {
		d.setIngested(e, false) // the Store's own write: it knows the value
	}
	return first, changed
}

// setIngested sets the origin of the last write of e (nil: a key the set
// does not hold), keeping viaIngest.
func (d *settleSet) setIngested(e *settleEntry, ingested bool) {
	if e != nil && ingested {
		d.lastIngest = max(d.lastIngest, e.ready)
	}
	if e == nil || e.ingested == ingested {
		return
	}
	if ingested {
		d.viaIngest++
	} else {
		d.viaIngest--
	}
	e.ingested = ingested
}

// markLocked is mark under d.mu, without the write's origin. It returns
// key's entry, nil when the mark overflowed the set.
func (d *settleSet) markLocked(key string, m Mark, ready, wrote time.Time, copies int32) (e *settleEntry, first, changed bool) {
	e, ok := d.keys[key]
	if !ok {
		if len(d.keys) >= d.max {
			d.overflow++
			first = !d.reconcile
			if first {
				d.reconcile, d.flagMoved = true, true
			}
			return nil, first, first && d.journaled
		}
		if s, was := d.sus[key]; was {
			// A write supersedes what a read suspected.
			d.superseded++
			d.susLine.remove(s)
			delete(d.sus, key)
			d.release(s)
		}
		e = d.entry(key)
		d.keys[key] = e
		d.lines[MarkSettled].insert(e) // moved to its mark's line below
	}
	d.gen++
	e.gen = d.gen
	d.setHeld(e, nil) // a write seen restarts every wait
	if w := nanos(wrote); w > e.wrote {
		e.wrote = w
		e.recovered = false // written since the restart: a write like any other
	}
	e.copies += copies
	if m > e.mark {
		d.setMark(e, m, nanos(ready))
		changed = d.journaled
	} else {
		d.readyLocked(e, &d.lines[e.mark], nanos(ready))
	}
	d.fly(e)
	return e, false, changed
}

// entry returns a blank entry for key, from the free list if it can.
func (d *settleSet) entry(key string) *settleEntry {
	e := d.free
	if e == nil {
		return &settleEntry{key: key}
	}
	d.free, d.freeN = e.next, d.freeN-1
	*e = settleEntry{key: key}
	return e
}

// maxFree bounds the free list: 4,096 entries, 320 KiB.
const maxFree = 4096

// release puts an entry that left the set and its timeline on the free
// list. Nothing else may point to it: the refs a pass holds name keys.
func (d *settleSet) release(e *settleEntry) {
	d.setHeld(e, nil)
	d.land(e)
	if d.freeN >= maxFree {
		return
	}
	*e = settleEntry{next: d.free}
	d.free, d.freeN = e, d.freeN+1
}

// readyLocked moves e's ready time to t if that is later.
func (d *settleSet) readyLocked(e *settleEntry, tl *timeline, t int64) {
	if t <= e.ready {
		return
	}
	e.ready = t
	tl.remove(e)
	tl.insert(e)
}

// setMark changes e's mark, and its ready time to at least ready, keeping
// the dirty count, the timelines and the journal's changes.
func (d *settleSet) setMark(e *settleEntry, m Mark, ready int64) {
	if e.mark == MarkDirty {
		d.dirty--
	}
	if m == MarkDirty {
		d.dirty++
	}
	d.lines[e.mark].remove(e)
	e.mark = m
	e.ready = max(e.ready, ready)
	d.lines[m].insert(e)
	if d.journaled {
		d.changes[e.key] = m
	}
	d.fly(e)
}

// newer reports whether an ingested write acknowledged at acked is newer
// than every one the set knows of for key: an older one must not be
// applied over a newer.
func (d *settleSet) newer(key string, acked time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.keys[key]
	return !ok || e.acked <= nanos(acked) && e.wrote <= nanos(acked)
}

// ingested records an ingested write, as mark does, with its
// acknowledged-at time.
func (d *settleSet) ingested(key string, m Mark, acked, ready time.Time, copies int32) (first, changed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, first, changed := d.markLocked(key, m, ready, acked, copies)
	if e != nil && nanos(acked) > e.acked {
		e.acked = nanos(acked)
	}
	d.setIngested(e, true)
	return first, changed
}

// copied notes that one of key's copies ended at end; failed marks the key
// dirty.
func (d *settleSet) copied(key string, end time.Time, failed bool) (first, changed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.keys[key]
	if !ok {
		return false, false // its mark overflowed the set, and was counted
	}
	if e.copies > 0 {
		e.copies--
	}
	if failed && e.mark != MarkDirty {
		d.gen++
		e.gen = d.gen
		d.setHeld(e, nil)
		d.setMark(e, MarkDirty, nanos(end))
		changed = d.journaled
	} else {
		d.readyLocked(e, &d.lines[e.mark], nanos(end))
	}
	d.fly(e)
	return false, changed
}

// load adds a key from the journal without recording a change.
func (d *settleSet) load(key string, m Mark, ready time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.keys[key]; ok || m == MarkSettled {
		return
	}
	if len(d.keys) >= d.max {
		d.overflow++
		d.reconcile = true
		d.flagMoved = d.journaled
		return
	}
	d.gen++
	if m == MarkDirty {
		d.dirty++
	}
	// Who wrote it last is not journaled: the flip waits for its
	// verification, as for a copy's.
	e := d.entry(key)
	e.mark, e.gen, e.ready, e.ingested, e.recovered = m, d.gen, nanos(ready), true, true
	d.viaIngest++
	d.lastIngest = max(d.lastIngest, e.ready)
	d.keys[key] = e
	d.lines[m].insert(e)
	d.fly(e)
}

// suspect notes that a sampled comparison found key different, as diff,
// at now. A key of the set holds the difference for its verification; any
// other key becomes a suspect, while the suspects have room (beyond, the
// suspicion is counted and dropped: the key was never written here, and a
// reconciliation or a later read finds it). A suspect read again after the
// window is confirmed, cleared or held anew like a key of the set.
func (d *settleSet) suspect(key string, diff held, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	at := nanos(now)
	if e, ok := d.keys[key]; ok {
		if e.held == nil || !e.held.same(diff) {
			d.judgeLocked(e, &d.lines[e.mark], diff, at, rule{})
		}
		return
	}
	e, ok := d.sus[key]
	if !ok {
		if len(d.sus) >= d.maxSus {
			d.susOverflow++
			return
		}
		d.gen++
		e = d.entry(key)
		e.mark, e.gen = MarkUnsettled, d.gen
		d.sus[key] = e
		d.susLine.insert(e)
	}
	if e.held == nil || !e.held.same(diff) {
		d.judgeLocked(e, &d.susLine, diff, at, rule{})
	}
}

// has reports whether key is dirty. The entry is read under the lock: once
// the key leaves the set its entry may be reused (release).
func (d *settleSet) has(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.keys[key]
	return ok && e.mark == MarkDirty
}

// lastWrite returns the key's last write as the set knows it.
func (d *settleSet) lastWrite(key string) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.keys[key]; ok {
		return timeOf(e.ready), true
	}
	return time.Time{}, false
}

// wroteAt returns the time of the key's latest write as its writer stamped
// it; ready instead when that is unknown (the key was loaded from the
// journal, or only suspected since), which is later.
func (d *settleSet) wroteAt(key string) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.keys[key]
	switch {
	case !ok:
		return time.Time{}, false
	case e.wrote == 0:
		return timeOf(e.ready), true
	}
	return timeOf(e.wrote), true
}

// due returns up to limit keys in state m, not queued for repair, that were
// ready at or before cutoff; dirty ones are marked queued. It walks m's
// timeline from its oldest entry and stops at the first one readied after
// cutoff: its cost is the keys due, plus those due but skipped (a copy or a
// repair of theirs on its way, at most what the lanes hold). It skips the
// keys whose held difference was first seen at or after mark, the fleet's
// watermark (noFleet: none): reading them again could not confirm them yet
// (see judgeLocked), so they wait, at the cost of a look each, until the
// watermark passes their first sight.
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
		out = append(out, settleRef{key: e.key, gen: e.gen, held: e.held != nil})
	}
	return out
}

// dueSuspects returns up to limit suspects whose difference was first seen
// at or before cutoff.
func (d *settleSet) dueSuspects(cutoff time.Time, limit int, mark int64) []settleRef {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := nanos(cutoff)
	var out []settleRef
	for e := d.susLine.head; e != nil && e.ready <= c && len(out) < limit; e = e.next {
		if e.held != nil && e.held.since >= mark {
			continue // see due
		}
		out = append(out, settleRef{key: e.key, gen: e.gen, held: true, suspect: true})
	}
	return out
}

// ready reports whether key is still at gen and its last write at or
// before cutoff: a repair made now cannot race a newer write.
func (d *settleSet) ready(key string, gen uint64, cutoff time.Time) bool {
	d.mu.Lock()
	e, ok := d.keys[key]
	defer d.mu.Unlock()
	return ok && e.gen == gen && e.ready <= nanos(cutoff)
}

// unqueue notes that key's repair is no longer waiting in a lane.
func (d *settleSet) unqueue(key string) {
	d.mu.Lock()
	if e, ok := d.keys[key]; ok {
		e.queued = false
	}
	d.mu.Unlock()
}

// repaired turns a dirty key that was not written again since gen into an
// unsettled one, ready at now: the copy is verified after another window,
// like any other write.
func (d *settleSet) repaired(key string, gen uint64, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.keys[key]
	if !ok || e.gen != gen {
		return false
	}
	d.gen++
	e.gen, e.recovered = d.gen, false
	d.setHeld(e, nil)
	d.setMark(e, MarkUnsettled, nanos(now))
	d.fly(e)
	return true
}

// settle removes ref's key, from the set or the suspects, if it was not
// written since ref was taken.
func (d *settleSet) settle(ref settleRef) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ref.suspect {
		e, ok := d.sus[ref.key]
		if !ok || e.gen != ref.gen {
			return false
		}
		d.susLine.remove(e)
		delete(d.sus, ref.key)
		d.release(e)
		return true
	}
	e, ok := d.keys[ref.key]
	if !ok || e.gen != ref.gen {
		return false
	}
	if e.mark == MarkDirty {
		d.dirty--
	}
	if e.ingested {
		d.viaIngest--
	}
	d.lines[e.mark].remove(e)
	delete(d.keys, ref.key)
	d.release(e)
	if d.journaled {
		d.changes[ref.key] = MarkSettled
	}
	return true
}

// judge applies the confirmation rule (see judgeLocked) to ref's key, which
// a read that began at ref.gen found to differ as diff at now. A confirmed
// difference leaves the key dirty, for repair: a suspect joins the set
// (first reports that it overflowed it, and raised the flag); changed says
// the journal has something new. A key recovered from the journal and not
// dirty yet is not judged: its difference may be a copy that died with the
// process, and it becomes dirty at once (verdictRecovered).
func (d *settleSet) judge(ref settleRef, diff held, now time.Time, r rule) (v verdict, first, changed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	at := nanos(now)
	if ref.suspect {
		e, ok := d.sus[ref.key]
		if !ok || e.gen != ref.gen {
			return verdictRaced, false, false
		}
		if v = d.judgeLocked(e, &d.susLine, diff, at, r); v != verdictConfirmed {
			return v, false, false
		}
		d.susLine.remove(e)
		delete(d.sus, ref.key)
		_, first, changed = d.markLocked(ref.key, MarkDirty, timeOf(e.held.since), time.Time{}, 0)
		if n, ok := d.keys[ref.key]; ok {
			d.setHeld(n, e.held) // the repair acts on the difference confirmed
		}
		d.release(e)
		return v, first, changed
	}
	e, ok := d.keys[ref.key]
	if !ok || e.gen != ref.gen {
		return verdictRaced, false, false
	}
	if e.recovered && e.mark != MarkDirty {
		d.recovered++
		d.setMark(e, MarkDirty, 0)
		return verdictRecovered, false, d.journaled
	}
	if v = d.judgeLocked(e, &d.lines[e.mark], diff, at, r); v == verdictConfirmed && e.mark != MarkDirty {
		d.setMark(e, MarkDirty, 0)
		changed = d.journaled
	}
	return v, false, changed
}

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

func (d *settleSet) pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.changes)
}

func (d *settleSet) snapshot() (dirty, unsettled int, overflow uint64, reconcile bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dirty, len(d.keys) - d.dirty, d.overflow, d.reconcile
}

// suspects returns the suspects held, the suspicions dropped for want of
// room, and the suspects writes superseded.
func (d *settleSet) suspects() (n int, overflow, superseded uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.sus), d.susOverflow, d.superseded
}

func (d *settleSet) list(m Mark) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for e := d.lines[m].head; e != nil; e = e.next {
		out = append(out, e.key)
	}
	return out
}

func (d *settleSet) acknowledge() bool {
	_, commit := d.acknowledgeAt(0, false)
	return commit
}

// acknowledgeAt clears the reconciliation flag, when only is false or no
// key overflowed the set since its overflow count was n; commit reports
// that the journal has the change to learn.
func (d *settleSet) acknowledgeAt(n uint64, only bool) (cleared, commit bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if only && d.overflow != n {
		return false, false
	}
	moved := d.reconcile
	d.reconcile = false
	d.flagMoved = d.flagMoved || (moved && d.journaled)
	return true, moved && d.journaled
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
