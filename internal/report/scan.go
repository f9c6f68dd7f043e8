package report

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

// position is where a scan resumes: in range Range, after key After (every
// key up to it is committed), listing each side from Cursors (primary,
// shadow): the cursors of the pages that held the last committed keys, so
// a resumed listing re-reads at most one page per side.
type position struct {
	Range   int       `json:"range"`
	After   string    `json:"after,omitempty"`
	Cursors [2]string `json:"cursors"`
}

// candidate is one key of the merged key streams, or of a key list.
type candidate struct {
	key, module         string
	inPrimary, inShadow bool
	// unlisted: the key came from Scope.Keys, so both sides are read and
	// what they hold decides the per-side counts.
	unlisted bool
}

// batch is the unit of work and of commit: keys to compare plus the keys
// consumed on the way (counted, not compared), and the position after it.
type batch struct {
	seq      int
	keys     []candidate
	counts   map[string]*Counts // per module
	order    []string           // the modules of counts, as first met
	consumed int64              // union keys in scope, sampled or not
	excluded int64              // union keys in the ranges, excluded
	seen     int64              // keys passed, in scope or not
	pos      position
	last     string // module of the last key, for progress

	records []compare.Record
	binary  []compare.Record // keys whose shadow value is not UTF-8
	large   []compare.Record // keys whose shadow value passes one bot document
	repair  RepairCounts
	// differing are the divergent keys to read again (Config.Settle).
	differing []differing
}

func newBatch(seq int) *batch { return &batch{seq: seq, counts: make(map[string]*Counts)} }

func (b *batch) module(m string) *Counts {
	c := b.counts[m]
	if c == nil {
		c = &Counts{Kinds: newKindCounts()}
		b.counts[m] = c
		b.order = append(b.order, m)
	}
	return c
}

// stream is one side's listing of one range, page by page.
type stream struct {
	side   *side
	prefix string
	limit  int
	notice func(format string, args ...any)

	cursor  string // requests the next page
	resumed bool   // cursor came from a checkpoint
	done    bool
	page    []string
	i       int
	start   string // cursor of the current page
	at      string // cursor of the page of the last consumed key
	last    string // last key seen, to check the order
	hasLast bool
}

func newStream(s *side, prefix string, limit int, cursor string, notice func(string, ...any)) *stream {
	return &stream{side: s, prefix: prefix, limit: limit, cursor: cursor, resumed: cursor != "", at: cursor, notice: notice}
}

// peek returns the next key without consuming it; ok is false at the end.
func (st *stream) peek(ctx context.Context) (key string, ok bool, err error) {
	for st.i >= len(st.page) {
		if st.done {
			return "", false, nil
		}
		res, err := st.side.listPage(ctx, kv.ListOptions{Prefix: st.prefix, Limit: st.limit, Cursor: st.cursor})
		if err != nil && st.resumed && errors.Is(err, kv.ErrInvalidCursor) {
			// The store no longer honours the checkpoint's cursor: list the
			// range again from its start; the merge skips what is done.
			st.notice("%s refused the checkpoint's cursor; listing the range %q again from its start", st.side.name, st.prefix)
			st.cursor, st.at, st.resumed = "", "", false
			continue
		}
		if err != nil {
			return "", false, fmt.Errorf("report: listing %s: %w", st.side.name, err)
		}
		st.resumed = false
		st.start, st.page, st.i = st.cursor, res.Keys, 0
		if res.Done {
			st.done = true
		} else if res.Cursor == "" {
			return "", false, fmt.Errorf("report: listing %s: a page that is not the last came without a cursor", st.side.name)
		} else {
			st.cursor = res.Cursor
		}
	}
	k := st.page[st.i]
	if st.hasLast && k <= st.last {
		return "", false, fmt.Errorf("%w: %s listed a key after a greater or equal one", ErrUnordered, st.side.name)
	}
	return k, true, nil
}

func (st *stream) next() {
	st.last, st.hasLast = st.page[st.i], true
	st.at = st.start
	st.i++
}

// sampled picks a key by a hash of it, so that every side and every rerun
// agree on the sample. FNV-1a's high bits hardly move between keys that
// differ in their last bytes, so the hash is finished with murmur3's mixer.
func sampled(key string, rate float64) bool {
	if rate >= 1 {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return float64(x>>11) < rate*(1<<53)
}

// produce merges the two sides' listings of every range from start, or
// takes Scope.Keys, and sends the batches; it returns when all are sent or
// ctx ends. Every send first takes a slot of window, which the committer
// frees, so that batches waiting for an earlier one to commit stay bounded.
func (e *engine) produce(ctx context.Context, start position, out chan<- *batch, window chan struct{}) (sent int, err error) {
	b := newBatch(0)
	// send sends b and starts the next batch.
	send := func() error {
		select {
		case window <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case out <- b:
			sent++
			b = newBatch(sent)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// add puts c in b, which then ends at pos, and sends b once full.
	add := func(c candidate, pos position) error {
		b.pos = pos
		b.seen++
		e.take(b, c)
		if e.full(b) {
			return send()
		}
		return nil
	}
	if e.cfg.Scope.KeyList > 0 {
		// A key-list run's position is range 0 until the end, then the
		// number of ranges, as a listing run's.
		for _, k := range e.cfg.Scope.Keys {
			if start.Range > 0 || start.After != "" && k <= start.After || !inRanges(k, e.ranges) {
				continue
			}
			if err := add(candidate{key: k, inPrimary: true, inShadow: true, unlisted: true}, position{After: k}); err != nil {
				return sent, err
			}
		}
		b.pos = position{Range: len(e.ranges)}
		return sent, send()
	}
	for r := start.Range; r < len(e.ranges); r++ {
		prefix := e.ranges[r]
		var after string
		var cursors [2]string
		if r == start.Range {
			after, cursors = start.After, start.Cursors
		}
		ps := newStream(e.primary, prefix, e.cfg.ListLimit, cursors[0], e.notice)
		ss := newStream(e.shadow, prefix, e.cfg.ListLimit, cursors[1], e.notice)
		for {
			pk, pok, err := ps.peek(ctx)
			if err != nil {
				return sent, err
			}
			sk, sok, err := ss.peek(ctx)
			if err != nil {
				return sent, err
			}
			if !pok && !sok {
				break
			}
			c := candidate{inPrimary: pok && (!sok || pk <= sk), inShadow: sok && (!pok || sk <= pk)}
			if c.inPrimary {
				c.key = pk
				ps.next()
			}
			if c.inShadow {
				c.key = sk
				ss.next()
			}
			if after != "" && c.key <= after {
				continue // committed before the checkpoint
			}
			if err := add(c, position{Range: r, After: c.key, Cursors: [2]string{ps.at, ss.at}}); err != nil {
				return sent, err
			}
		}
		b.pos = position{Range: r + 1}
		if err := send(); err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// full reports whether b is ready to send: a batch of keys to compare, or
// many keys passed without one (sampled out, excluded), so that the
// checkpoint keeps moving.
func (e *engine) full(b *batch) bool {
	return len(b.keys) >= e.cfg.BatchSize || b.seen >= 10*kv.MaxListLimit
}

// take counts c into b, when in scope, and queues it for comparison when
// sampled.
func (e *engine) take(b *batch, c candidate) {
	c.module = kv.ModuleOf(c.key)
	if e.cfg.Scope.excluded(c.key, c.module) {
		b.excluded++
		return
	}
	b.consumed++
	b.last = c.module
	m := b.module(c.module)
	if c.inPrimary && !c.unlisted {
		m.PrimaryKeys++
	}
	if c.inShadow && !c.unlisted {
		m.ShadowKeys++
	}
	if sampled(c.key, e.cfg.Scope.SampleRate) {
		b.keys = append(b.keys, c)
	}
}
