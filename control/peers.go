package control

import (
	"context"
	"time"
)

// PeerAware is the optional ability of a Target to be told until when the
// other instances on the Board may have written through their own stores
// (dualwrite.Store.SetPeersUntil, which warns of a store without a Fleet).
// The Follower tells it after every heartbeat, Start's first included.
type PeerAware interface {
	SetPeersUntil(t time.Time)
}

// peers works out from the heartbeats on the Board until when another
// instance may have written, and tells the Target: a live one until
// LiveFor after its heartbeat (it may write until then, and beats again
// if alive), a stopped one until its last heartbeat (written after its
// stores closed), one forgotten since the last look until now (it left
// meanwhile). A Board that cannot be read hides whoever may be writing:
// as if one were alive. The time only moves forward; nothing is told
// until the Board shows another instance or cannot be read.
func (f *Follower) peers(ctx context.Context) {
	aware, ok := f.cfg.Target.(PeerAware)
	if !ok && f.cfg.Fleet == nil {
		return
	}
	now := f.clock.Now()
	var until time.Time
	beats, err := f.cfg.Board.Instances(ctx)
	if f.cfg.Fleet != nil {
		f.cfg.Fleet.observe(f.cfg.Instance, f.clock.Now, beats, now, f.cfg.LiveFor, err == nil)
	}
	if !ok {
		f.boardDone(err)
		return
	}
	if f.boardDone(err) != nil {
		until = now.Add(f.cfg.LiveFor)
	} else {
		seen := make(map[string]bool, len(beats))
		for _, h := range beats {
			if h.Instance == f.cfg.Instance {
				continue
			}
			seen[h.Instance] = true
			u := h.At.Add(f.cfg.LiveFor)
			if h.Stopped {
				u = h.At
			}
			until = later(until, u)
		}
		for name := range f.seen {
			if !seen[name] {
				until = later(until, now)
			}
		}
		f.seen = seen
	}
	f.mu.Lock()
	f.status.PeersUntil = later(f.status.PeersUntil, until)
	until = f.status.PeersUntil
	f.mu.Unlock()
	if !until.IsZero() {
		aware.SetPeersUntil(until)
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
