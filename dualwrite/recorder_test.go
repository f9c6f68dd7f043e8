package dualwrite_test

import (
	"context"
	"sync"
	"testing"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// recorder is an Observer that records events and checks the contract:
// each context from AsyncContext reaches exactly one OpDone, and calling
// back into the Store from any method does not deadlock (no Store lock is
// held around it).
type recorder struct {
	dualwrite.NopObserver
	t     *testing.T
	store *dualwrite.Store

	mu       sync.Mutex
	next     int
	open     map[int]bool
	double   int
	ops      map[dualwrite.Op]map[dualwrite.Outcome]int
	done     []dualwrite.OpEvent // in the order reported
	drops    map[dualwrite.DropReason]int
	kinds    map[compare.Kind]int
	repairs  map[dualwrite.RepairOutcome]int
	breakers []dualwrite.BreakerEvent
	stages   []dualwrite.StageEvent
}

type tokenKey struct{}

func newRecorder(t *testing.T) *recorder {
	return &recorder{
		t: t, open: map[int]bool{},
		ops:   map[dualwrite.Op]map[dualwrite.Outcome]int{},
		drops: map[dualwrite.DropReason]int{}, kinds: map[compare.Kind]int{},
		repairs: map[dualwrite.RepairOutcome]int{},
	}
}

func (r *recorder) reenter() {
	if r.store != nil {
		_ = r.store.Stats()
		_ = r.store.Stage()
	}
}

func (r *recorder) AsyncContext(caller context.Context, op dualwrite.Op) context.Context {
	r.mu.Lock()
	r.next++
	id := r.next
	r.open[id] = true
	r.mu.Unlock()
	return context.WithValue(context.WithoutCancel(caller), tokenKey{}, id)
}

func (r *recorder) OpDone(ctx context.Context, e dualwrite.OpEvent) {
	r.reenter()
	id, _ := ctx.Value(tokenKey{}).(int)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.open[id] {
		r.double++
	}
	delete(r.open, id)
	if r.ops[e.Op] == nil {
		r.ops[e.Op] = map[dualwrite.Outcome]int{}
	}
	r.ops[e.Op][e.Outcome]++
	r.done = append(r.done, e)
}

// opEvents returns the OpEvents reported so far.
func (r *recorder) opEvents() []dualwrite.OpEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]dualwrite.OpEvent(nil), r.done...)
}

func (r *recorder) Dropped(_ context.Context, e dualwrite.DropEvent) {
	r.reenter()
	r.mu.Lock()
	if e.Op != dualwrite.OpCompare {
		r.drops[e.Reason]++
	}
	r.mu.Unlock()
}

func (r *recorder) Compared(ctx context.Context, e dualwrite.CompareEvent) {
	r.reenter()
	r.mu.Lock()
	r.kinds[e.Kind]++
	r.mu.Unlock()
}

func (r *recorder) Repaired(_ context.Context, e dualwrite.RepairEvent) {
	r.reenter()
	r.mu.Lock()
	r.repairs[e.Outcome]++
	r.mu.Unlock()
}

func (r *recorder) BreakerChanged(e dualwrite.BreakerEvent) {
	r.reenter()
	r.mu.Lock()
	r.breakers = append(r.breakers, e)
	r.mu.Unlock()
}

func (r *recorder) StageChanged(e dualwrite.StageEvent) {
	r.reenter()
	r.mu.Lock()
	r.stages = append(r.stages, e)
	r.mu.Unlock()
}

func (r *recorder) breakerTrail(role dualwrite.Role) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	trail := ""
	for _, e := range r.breakers {
		if e.Role == role {
			trail += string(e.To) + " "
		}
	}
	return trail
}

// check runs after Close: every asynchronous context was finished once.
func (r *recorder) check() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.open) != 0 || r.double != 0 {
		r.t.Errorf("observer: %d async contexts never finished, %d finished twice", len(r.open), r.double)
	}
}

// sinkRecorder keeps the divergence records.
type sinkRecorder struct {
	mu   sync.Mutex
	recs []compare.Record
}

func (s *sinkRecorder) Divergence(_ context.Context, rec compare.Record) {
	s.mu.Lock()
	s.recs = append(s.recs, rec)
	s.mu.Unlock()
}

func (s *sinkRecorder) records() []compare.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]compare.Record(nil), s.recs...)
}
