package dualwrite

import "time"

// timeline is a list of settle entries in the order of their ready time,
// oldest first, so that the entries due by a cutoff are found from its head
// at a cost in proportion to their number, never a scan of the whole set
// under the lock that writes take. An entry moves when its ready time
// does: a write readies its key at the clock's now, which only grows, so
// an insertion walks back from the tail past the few entries readied later
// (a clamped copy waits for its original's expiry) and costs O(1) in the
// usual case.
type timeline struct{ head, tail *settleEntry }

// insert places e by its ready time, after the entries readied at the
// same time.
func (t *timeline) insert(e *settleEntry) {
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
// time. An int64 is a third of a time.Time, and the set holds three a key.
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
