package service

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/service/admin"
)

// reconciler records in the Ledger each overflow of this instance's settle
// sets (control.Overflow), and clears one with a report run (POST
// /reconciliation, control.CheckClears). A restart on a journal that kept
// the flag counts as a growth: the keys lost before it are not counted.
type reconciler struct {
	ledger   control.Ledger
	instance string
	clock    clock.Clock
	log      *slog.Logger

	// mu serializes the observations and the clears of every namespace,
	// so that a clear sees the growth a concurrent observation records.
	mu sync.Mutex
	ns map[string]*overflowState
}

// overflowState is one namespace's side.
type overflowState struct {
	dual     *dualwrite.Store
	database string
	open     *control.Overflow // recorded, not cleared
	seen     uint64            // the store's DirtyOverflow when last brought up to date
	last     control.Overflow  // the newest, open or cleared, for /stats
}

var _ admin.Reconciler = (*reconciler)(nil)

// databaseOf is the MongoDB database of a namespace's shadow.
func databaseOf(ns Namespace) string { return cmp.Or(ns.Database, mongokv.DefaultDatabase) }

func newReconciler(ledger control.Ledger, instance string, clk clock.Clock, log *slog.Logger, fl *fleet, c *Config) *reconciler {
	r := &reconciler{ledger: ledger, instance: instance, clock: clk, log: log, ns: map[string]*overflowState{}}
	for i, s := range fl.ns {
		r.ns[s.ID] = &overflowState{dual: s.Dual, database: databaseOf(c.Namespaces[i])}
	}
	return r
}

// observe brings every namespace's record up to date, or tries again at the
// next observation.
func (r *reconciler) observe(ctx context.Context) {
	var failed []string
	r.mu.Lock()
	for id, s := range r.ns {
		if err := r.observeOne(ctx, id, s); err != nil {
			failed = append(failed, fmt.Sprintf("namespace %s: %v", id, err))
		}
	}
	r.mu.Unlock()
	for _, f := range failed {
		r.log.Warn("kvshadow-proxy: the settle set overflowed, and the overflow could not be recorded; it cannot be cleared until it is", slog.String("error", f))
	}
}

// observeOne records a raise or a growth of one namespace's overflow.
func (r *reconciler) observeOne(ctx context.Context, id string, s *overflowState) error {
	st := s.dual.Stats()
	if !st.ReconciliationNeeded {
		return nil
	}
	if s.open != nil && st.DirtyOverflow == s.seen {
		return nil
	}
	var next control.Overflow
	switch {
	case s.open != nil:
		next = *s.open
		next.Growth++
	default:
		last, ok, err := r.ledger.LastOverflow(ctx, r.instance, id)
		if err != nil {
			return err
		}
		if ok && last.Open() {
			// Raised before a restart on the journal: what was lost
			// between its last growth and the restart is not counted.
			next = last
			next.Growth++
		} else {
			next = control.Overflow{ID: control.NewID(), Instance: r.instance, Namespace: id, RaisedAt: r.clock.Now()}
		}
	}
	if err := r.ledger.SaveOverflow(ctx, next); err != nil {
		return err
	}
	s.open, s.seen, s.last = &next, st.DirtyOverflow, next
	return nil
}

// Reconciliation implements admin.Reconciler.
func (r *reconciler) Reconciliation(namespace string) admin.ReconciliationView {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.ns[namespace]
	if !ok {
		return admin.ReconciliationView{}
	}
	return admin.ReconciliationOf(s.dual.Stats().ReconciliationNeeded, s.last)
}

// Clear implements admin.Reconciler.
func (r *reconciler) Clear(ctx context.Context, namespace, report string) (admin.ReconciliationView, error) {
	r.mu.Lock()
	v, err := r.clear(ctx, namespace, report)
	r.mu.Unlock()
	if err == nil {
		r.log.Info("kvshadow-proxy: reconciliation cleared", slog.String("kv_namespace", namespace), slog.String("overflow", v.Overflow), slog.String("report", v.ClearedBy))
	}
	return v, err
}

func (r *reconciler) clear(ctx context.Context, namespace, report string) (admin.ReconciliationView, error) {
	s, ok := r.ns[namespace]
	if !ok {
		return admin.ReconciliationView{}, fmt.Errorf("%w: %q", admin.ErrUnknownNamespace, namespace)
	}
	if err := r.observeOne(ctx, namespace, s); err != nil {
		return admin.ReconciliationOf(true, s.last), err
	}
	if !s.dual.Stats().ReconciliationNeeded || s.open == nil {
		return admin.ReconciliationOf(false, s.last), fmt.Errorf("%w: namespace %s needs no reconciliation: its settle set has not overflowed since it was last cleared", control.ErrNotReconciled, namespace)
	}
	run, err := r.ledger.Report(ctx, report)
	if err != nil {
		return admin.ReconciliationOf(true, s.last), err
	}
	if err := control.CheckClears(run, *s.open, namespace, s.database); err != nil {
		return admin.ReconciliationOf(true, s.last), err
	}
	if !s.dual.AcknowledgeReconciliationAt(s.seen) {
		return admin.ReconciliationOf(true, s.last), fmt.Errorf("%w: the settle set of namespace %s overflowed again while report %s was checked: run a full report now", control.ErrNotReconciled, namespace, run.ID)
	}
	cleared := *s.open
	cleared.ClearedAt, cleared.ClearedBy = r.clock.Now(), run.ID
	s.open, s.last = nil, cleared
	if err := r.ledger.SaveOverflow(ctx, cleared); err != nil {
		return admin.ReconciliationOf(false, cleared), fmt.Errorf("the flag is cleared, but its record could not be written: %w", err)
	}
	return admin.ReconciliationOf(false, cleared), nil
}
