package dualwrite

import "time"

// SetPeersUntil tells the Store until when other instances, each with a
// Store of its own over the same two stores, may have written keys of its
// namespace: t is in the future while one is alive; package control's
// Follower calls it after every heartbeat, from the others' heartbeats. A
// Store without a Config.Fleet that is told of peers warns once: its
// verification would confirm differences that their copies in flight
// explain. (Late copies need no peers: only Workers KV's evidence applies
// one, see The handover.)
func (s *Store) SetPeersUntil(t time.Time) {
	if s.cfg.Fleet == nil && !t.IsZero() && !s.noFleetSaid.Swap(true) {
		s.log.Warn("dualwrite: other instances may write this store's keys (SetPeersUntil), but its Config.Fleet is nil: " +
			"it may confirm differences that their copies in flight explain; give it one (control.Stores builds the store with it)")
	}
}
