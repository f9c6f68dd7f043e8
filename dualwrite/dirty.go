package dualwrite

import (
	"sync"
	"time"
)

// dirtySet holds the keys whose copy in the non-authoritative store may be
// wrong. It is bounded: past max keys it only counts, and raises the flag
// that a full reconciliation is needed. Its methods never call out.
type dirtySet struct {
	mu        sync.Mutex
	max       int
	keys      map[string]dirtyEntry
	gen       uint64
	overflow  uint64
	reconcile bool
}

type dirtyEntry struct {
	// gen changes with every mark, so that a repair that read the
	// authoritative store before a newer mark does not clear it.
	gen uint64
	// ready is when the key's last trouble happened (or, for a clamped
	// copy, when its original expires); repair waits the consistency
	// window past it.
	ready time.Time
	// queued is set while a repair of the key waits in its lane, so that
	// a second pass does not queue it twice.
	queued bool
}

type dirtyRef struct {
	key string
	gen uint64
}

func newDirtySet(max int) *dirtySet {
	return &dirtySet{max: max, keys: make(map[string]dirtyEntry)}
}

// mark records key as dirty from ready on. first reports that this mark
// overflowed the set and raised the reconciliation flag.
func (d *dirtySet) mark(key string, ready time.Time) (first bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.keys[key]
	if !ok && len(d.keys) >= d.max {
		d.overflow++
		first = !d.reconcile
		d.reconcile = true
		return first
	}
	d.gen++
	e.gen = d.gen
	if ready.After(e.ready) {
		e.ready = ready
	}
	d.keys[key] = e
	return false
}

func (d *dirtySet) has(key string) bool {
	d.mu.Lock()
	_, ok := d.keys[key]
	d.mu.Unlock()
	return ok
}

// eligible returns up to limit keys, not already queued for repair, that
// were ready at or before cutoff, and marks them queued.
func (d *dirtySet) eligible(cutoff time.Time, limit int) []dirtyRef {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []dirtyRef
	for k, e := range d.keys {
		if len(out) >= limit {
			break
		}
		if !e.queued && !e.ready.After(cutoff) {
			e.queued = true
			d.keys[k] = e
			out = append(out, dirtyRef{key: k, gen: e.gen})
		}
	}
	return out
}

// unqueue notes that key's repair is no longer waiting in a lane.
func (d *dirtySet) unqueue(key string) {
	d.mu.Lock()
	if e, ok := d.keys[key]; ok && e.queued {
		e.queued = false
		d.keys[key] = e
	}
	d.mu.Unlock()
}

// clear removes key if it was not marked again since gen was read.
func (d *dirtySet) clear(key string, gen uint64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.keys[key]; ok && e.gen == gen {
		delete(d.keys, key)
		return true
	}
	return false
}

func (d *dirtySet) snapshot() (n int, overflow uint64, reconcile bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.keys), d.overflow, d.reconcile
}

func (d *dirtySet) list() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.keys))
	for k := range d.keys {
		out = append(out, k)
	}
	return out
}

func (d *dirtySet) acknowledge() {
	d.mu.Lock()
	d.reconcile = false
	d.mu.Unlock()
}
