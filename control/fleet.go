package control

import (
	"context"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// Claimer is the optional ability of a Board to record that one instance
// reports a difference, so that the fleet reports it once (see Fleet).
// MongoBoard and MemoryBoard have it.
type Claimer interface {
	// Claim records id as reported by instance at at, unless another
	// instance claimed it after at-hold: first is false then.
	Claim(ctx context.Context, id [32]byte, instance string, at time.Time, hold time.Duration) (first bool, err error)
}

// Fleet is what the heartbeats tell an instance's stores of the others:
// each namespace's oldest write another live instance may still have on
// its way, and the claims of the differences reported. The Follower whose
// Config names it updates it after every heartbeat; Namespace is a store's
// dualwrite.Fleet.
//
// Who holds a confirmation back, and for how long, is dualwrite's
// Confirmation: a live instance, until its heartbeat is LiveFor old. A
// stopped instance counts no more (its lanes were drained at Close, or what
// was left is dirty in its journal), nor one whose heartbeat has no
// watermark for the namespace (it serves none of it, or is of a version
// without watermarks).
type Fleet struct {
	mu    sync.Mutex
	known bool
	read  time.Time            // when the board was last read
	marks map[string]time.Time // namespace: the oldest other live instance's watermark
	board Claimer              // nil: every claim is the first
	self  string
	now   func() time.Time // the Follower's clock
}

// NewFleet returns a Fleet that knows nothing yet: its stores confirm
// nothing until the Follower's first heartbeat. board, if it is a Claimer,
// keeps the claims; else every instance reports what it confirms.
func NewFleet(board Board) *Fleet {
	f := &Fleet{marks: map[string]time.Time{}}
	f.board, _ = board.(Claimer)
	return f
}

// Namespace returns the view of one Workers KV namespace, for the
// dualwrite.Config of its store.
func (f *Fleet) Namespace(id string) dualwrite.Fleet { return &fleetView{f: f, ns: id} }

// observe takes the heartbeats read at now (ok false: the Board could not).
func (f *Fleet) observe(self string, clock func() time.Time, beats []Heartbeat, now time.Time, liveFor time.Duration, ok bool) {
	f.mu.Lock()
	f.now = clock
	f.mu.Unlock()
	if !ok {
		return
	}
	marks := map[string]time.Time{}
	for _, h := range beats {
		if h.Instance == self || h.Stopped || now.Sub(h.At) > liveFor {
			continue
		}
		for ns, w := range h.Watermarks {
			if cur, seen := marks[ns]; !seen || w.Before(cur) {
				marks[ns] = w
			}
		}
	}
	f.mu.Lock()
	f.known, f.read, f.marks, f.self = true, now, marks, self
	f.mu.Unlock()
}

type fleetView struct {
	f  *Fleet
	ns string
}

// Watermark implements dualwrite.Fleet; zero before the first read.
func (v *fleetView) Watermark(context.Context) time.Time {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	if !v.f.known {
		return time.Time{}
	}
	if w, ok := v.f.marks[v.ns]; ok && w.Before(v.f.read) {
		return w
	}
	return v.f.read
}

// Claim implements dualwrite.Fleet through the Board.
func (v *fleetView) Claim(ctx context.Context, id [32]byte, hold time.Duration) (bool, error) {
	v.f.mu.Lock()
	board, self, now := v.f.board, v.f.self, v.f.now
	v.f.mu.Unlock()
	if board == nil || now == nil {
		return true, nil
	}
	return board.Claim(ctx, id, self, now(), hold)
}
