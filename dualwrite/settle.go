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
type settleSet struct {
	mu        sync.Mutex
	max       int
	keys      map[string]settleEntry
	gen       uint64
	overflow  uint64
	reconcile bool
	dirty     int // keys in MarkDirty

	journaled bool            // changes are kept for a journal
	changes   map[string]Mark // since the committer last took them
	flagMoved bool            // reconcile changed since then
}

type settleEntry struct {
	mark Mark
	// gen changes with every write of the key and every change of its
	// mark, so that a repair or a verification that read the stores before
	// a newer write does not settle it.
	gen uint64
	// ready is when the key was last written (or, for a clamped copy, when
	// its original expires); repair and verification wait the consistency
	// window past it.
	ready time.Time
	// acked is the latest acknowledged-at time of an ingested write, so
	// that an older one arriving later is not applied over it.
	acked time.Time
	// wrote is the time of the key's latest write as its writer stamped
	// it (the Store's clock for its own writes, the acknowledged-at time
	// for an ingested one), unlike ready, which copies move on: a tee's
	// read made before it is inconclusive. Zero after a restart.
	wrote time.Time
	// queued is set while a repair of the key waits in its lane, so that
	// a second pass does not queue it twice.
	queued bool
	// suspected is set by a comparison that disagreed; the verification
	// after the window confirms or clears it.
	suspected bool
	// copies counts the key's copies queued or running: a key is not
	// verified while its own copy is on its way.
	copies int32
}

type settleRef struct {
	key       string
	gen       uint64
	suspected bool
}

func newSettleSet(max int, journaled bool) *settleSet {
	d := &settleSet{max: max, keys: make(map[string]settleEntry), journaled: journaled}
	if journaled {
		d.changes = make(map[string]Mark)
	}
	return d
}

// mark records a write of key at ready in state m (MarkUnsettled or
// MarkDirty), with copies new copies queued; a dirty key stays dirty until
// repaired. wrote is the write's own time, zero when the mark is no write. first reports that this mark overflowed the set and raised the
// reconciliation flag; changed that the journal has something new to
// commit.
func (d *settleSet) mark(key string, m Mark, ready, wrote time.Time, copies int32) (first, changed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.markLocked(key, m, ready, wrote, copies)
}

func (d *settleSet) markLocked(key string, m Mark, ready, wrote time.Time, copies int32) (first, changed bool) {
	e, ok := d.keys[key]
	if !ok && len(d.keys) >= d.max {
		d.overflow++
		first = !d.reconcile
		if first {
			d.reconcile, d.flagMoved = true, true
		}
		return first, first && d.journaled
	}
	d.gen++
	e.gen = d.gen
	if ready.After(e.ready) {
		e.ready = ready
	}
	if wrote.After(e.wrote) {
		e.wrote = wrote
	}
	e.copies += copies
	if m > e.mark {
		d.setMark(key, &e, m)
		changed = d.journaled
	}
	d.keys[key] = e
	return false, changed
}

// setMark changes e's mark, keeping the dirty count and the journal's
// changes; the caller stores e.
func (d *settleSet) setMark(key string, e *settleEntry, m Mark) {
	if e.mark == MarkDirty {
		d.dirty--
	}
	if m == MarkDirty {
		d.dirty++
	}
	e.mark = m
	if d.journaled {
		d.changes[key] = m
	}
}

// newer reports whether an ingested write acknowledged at acked is newer
// than every one the set knows of for key: an older one must not be
// applied over a newer.
func (d *settleSet) newer(key string, acked time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.keys[key]
	return !ok || !e.acked.After(acked)
}

// ingested records an ingested write, as mark does, with its
// acknowledged-at time.
func (d *settleSet) ingested(key string, m Mark, acked, ready time.Time, copies int32) (first, changed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	first, changed = d.markLocked(key, m, ready, acked, copies)
	if e, ok := d.keys[key]; ok && acked.After(e.acked) {
		e.acked = acked
		d.keys[key] = e
	}
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
	if end.After(e.ready) {
		e.ready = end
	}
	if failed && e.mark != MarkDirty {
		d.gen++
		e.gen = d.gen
		d.setMark(key, &e, MarkDirty)
		changed = d.journaled
	}
	d.keys[key] = e
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
	d.keys[key] = settleEntry{mark: m, gen: d.gen, ready: ready}
}

// suspect notes that a sampled comparison of key disagreed at now.
func (d *settleSet) suspect(key string, now time.Time) (first, changed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	first, changed = d.markLocked(key, MarkUnsettled, now, time.Time{}, 0)
	if e, ok := d.keys[key]; ok {
		e.suspected = true
		d.keys[key] = e
	}
	return first, changed
}

func (d *settleSet) has(key string) bool {
	d.mu.Lock()
	e, ok := d.keys[key]
	d.mu.Unlock()
	return ok && e.mark == MarkDirty
}

// lastWrite returns the key's last write as the set knows it.
func (d *settleSet) lastWrite(key string) (time.Time, bool) {
	d.mu.Lock()
	e, ok := d.keys[key]
	d.mu.Unlock()
	return e.ready, ok
}

// wroteAt returns the time of the key's latest write as its writer stamped
// it; ready instead when that is unknown (the key was loaded from the
// journal, or only suspected since), which is later.
func (d *settleSet) wroteAt(key string) (time.Time, bool) {
	d.mu.Lock()
	e, ok := d.keys[key]
	d.mu.Unlock()
	if e.wrote.IsZero() {
		return e.ready, ok
	}
	return e.wrote, ok
}

// due returns up to limit keys in state m, not queued for repair, that were
// ready at or before cutoff; dirty ones are marked queued.
func (d *settleSet) due(m Mark, cutoff time.Time, limit int) []settleRef {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []settleRef
	for k, e := range d.keys {
		if len(out) >= limit {
			break
		}
		if e.mark == m && !e.queued && (m == MarkDirty || e.copies == 0) && !e.ready.After(cutoff) {
			if m == MarkDirty {
				e.queued = true
				d.keys[k] = e
			}
			out = append(out, settleRef{key: k, gen: e.gen, suspected: e.suspected})
		}
	}
	return out
}

// ready reports whether key is still at gen and its last write at or
// before cutoff: a repair made now cannot race a newer write.
func (d *settleSet) ready(key string, gen uint64, cutoff time.Time) bool {
	d.mu.Lock()
	e, ok := d.keys[key]
	d.mu.Unlock()
	return ok && e.gen == gen && !e.ready.After(cutoff)
}

// unqueue notes that key's repair is no longer waiting in a lane.
func (d *settleSet) unqueue(key string) {
	d.mu.Lock()
	if e, ok := d.keys[key]; ok && e.queued {
		e.queued = false
		d.keys[key] = e
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
	e.gen, e.ready = d.gen, now
	d.setMark(key, &e, MarkUnsettled)
	d.keys[key] = e
	return true
}

// settle removes key if it was not written since gen was read.
func (d *settleSet) settle(key string, gen uint64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.keys[key]
	if !ok || e.gen != gen {
		return false
	}
	if e.mark == MarkDirty {
		d.dirty--
	}
	delete(d.keys, key)
	if d.journaled {
		d.changes[key] = MarkSettled
	}
	return true
}

// diverged turns an unsettled key whose verification found a difference
// into a dirty one, ready for repair at once (the read was made after the
// window).
func (d *settleSet) diverged(key string, gen uint64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.keys[key]
	if !ok || e.gen != gen {
		return false
	}
	e.suspected = false
	d.setMark(key, &e, MarkDirty)
	d.keys[key] = e
	return true
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

func (d *settleSet) list(m Mark) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for k, e := range d.keys {
		if e.mark == m {
			out = append(out, k)
		}
	}
	return out
}

func (d *settleSet) acknowledge() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	moved := d.reconcile
	d.reconcile = false
	d.flagMoved = d.flagMoved || (moved && d.journaled)
	return moved && d.journaled
}
