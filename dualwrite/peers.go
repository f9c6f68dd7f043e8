package dualwrite

import "time"

// SetPeersUntil tells the Store until when other instances over the same
// two stores may have written keys of its namespace (t in the future while
// one is alive); package control's Follower calls it after every heartbeat.
// A Store without a Config.Fleet that is told of peers warns once: its
// verification would confirm differences their copies in flight explain.
func (s *Store) SetPeersUntil(t time.Time) {
	if s.cfg.Fleet == nil && !t.IsZero() && !s.noFleetSaid.Swap(true) {
		s.log.Warn("dualwrite: other instances may write this store's keys (SetPeersUntil), but its Config.Fleet is nil: " +
			"it may confirm differences that their copies in flight explain; give it one (control.Stores builds the store with it)")
	}
}
