package dualwrite

import "time"

// SetPeersUntil tells the Store until when other instances, each with a
// Store of its own over the same two stores, may have written keys of its
// namespace: t is in the future while one is alive. A late copy (see The
// handover) acknowledged before t, within IngestMaxLead, may have been
// overtaken by a write this Store never saw, so the Store cannot tell that
// it was the last acknowledged write: it is superseded when this Store
// wrote its key after it, and otherwise a conflict, reported with t and
// never applied. t only moves forward: an earlier time is ignored. The
// zero Store has no peers; package control's Follower calls this after
// every heartbeat, from the others' heartbeats.
//
// A Store without a Config.Fleet that is told of peers warns once: its
// verification would confirm differences that their copies in flight
// explain.
func (s *Store) SetPeersUntil(t time.Time) {
	if s.cfg.Fleet == nil && !t.IsZero() && !s.noFleetSaid.Swap(true) {
		s.log.Warn("dualwrite: other instances may write this store's keys (SetPeersUntil), but its Config.Fleet is nil: " +
			"it may confirm differences that their copies in flight explain; give it one (control.Stores builds the store with it)")
	}
	n := t.UnixNano()
	for {
		old := s.peersUntil.Load()
		if n <= old || s.peersUntil.CompareAndSwap(old, n) {
			return
		}
	}
}

// peersAfter returns until when other instances may have written, when
// that is not before a copy acknowledged at at (within IngestMaxLead):
// they may have written its key after it. Zero when no instance can have.
func (s *Store) peersAfter(at time.Time) time.Time {
	n := s.peersUntil.Load()
	if n == 0 {
		return time.Time{}
	}
	until := time.Unix(0, n)
	if at.After(until.Add(s.cfg.IngestMaxLead)) {
		return time.Time{}
	}
	return until
}
