package service

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/kvshadow/kvshadow/assembly"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/service/admin"
)

// readiness gathers the reasons the instance should get no traffic: it is
// draining, an authoritative store does not answer, it lags behind the
// stage document, or it does not know the stage at all (gate). A store
// that is not authoritative and fails is no reason (the callers never wait
// for it): it is reported as degraded, as is a control board out of reach.
type readiness struct {
	fleet    *fleet
	follower *control.Follower
	gate     *stageGate
	draining atomic.Bool

	mu    sync.Mutex
	down  map[string]string // namespace/role -> why, the authoritative stores'
	shade map[string]string // namespace/role -> why, the others'
	up    map[storeKey]bool // every store's last answer
}

// storeKey names one store of the fleet.
type storeKey struct {
	namespace string
	role      dualwrite.Role
}

// probe reads each namespace's two stores at once, directly (not through
// the dual-write store, which would copy or compare).
func (r *readiness) probe(ctx context.Context) {
	down, shade, up := map[string]string{}, map[string]string{}, map[storeKey]bool{}
	for _, a := range assembly.Probe(ctx, r.fleet.ns, false) {
		k, id := storeKey{a.Served.ID, a.Role}, a.Served.ID+"/"+a.Role.String()
		up[k] = a.Err == nil
		switch {
		case a.Err == nil:
		case (a.Role == dualwrite.RoleShadow) == a.Served.Dual.Stage().ShadowAuthoritative():
			down[id] = fmt.Sprintf("the authoritative store (%s) of namespace %s does not answer: %s", a.Role, a.Served.ID, a.Where)
		default:
			shade[id] = fmt.Sprintf("the store copied to (%s) of namespace %s does not answer: %s; "+
				"its copies are skipped and their keys kept dirty, to be repaired once it answers", a.Role, a.Served.ID, a.Where)
		}
	}
	r.mu.Lock()
	r.down, r.shade, r.up = down, shade, up
	r.mu.Unlock()
}

// reachable is every store's last answer to the probe, for the gauge.
func (r *readiness) reachable() map[storeKey]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.up)
}

// The general words of each reason, which /readyz gives without a token.
const (
	whyDraining    = "draining: the service is shutting down"
	whyStage       = "stage: this instance does not yet run the stage document's generation"
	whyStageless   = "stage: unknown: the control board cannot be read and this instance keeps no stage it may serve without it"
	whyUnreachable = "an authoritative store does not answer"
	whyJournal     = "durable state: a settle journal cannot commit"
	whyShade       = "a store copied to does not answer (not a reason to take traffic away)"
	whyBoard       = "the control board cannot be read: this instance runs its last stage (not a reason to take traffic away)"
)

// reasons implements admin.Config.Ready.
func (r *readiness) reasons(context.Context) []admin.Reason {
	var out []admin.Reason
	if r.draining.Load() {
		out = append(out, admin.Reason{General: whyDraining})
	}
	st := r.follower.Status()
	switch {
	case r.gate != nil && !r.gate.opened():
		out = append(out, admin.Reason{General: whyStageless, Detail: "stage: unknown: " + whyNoStage + " (" + mongokv.ShortTopology(st.BoardErr) + ")"})
	case st.Detached:
		out = append(out, admin.Reason{General: whyBoard, Degraded: true,
			Detail: "the control board cannot be read (" + mongokv.ShortTopology(st.BoardErr) + "): this instance runs " + st.Stage.String() +
				", the last stage it ran, in which Workers KV is authoritative, and follows the stage document once it can read it"})
	case !st.InSync():
		lag := cmp.Or(st.Lag, fmt.Sprintf("runs generation %d, the stage document is at %d", st.Generation, st.Document.Generation))
		out = append(out, admin.Reason{General: whyStage, Detail: "stage: " + lag})
	}
	r.mu.Lock()
	for _, s := range r.fleet.ns {
		for _, role := range []dualwrite.Role{dualwrite.RolePrimary, dualwrite.RoleShadow} {
			k := s.ID + "/" + role.String()
			if why, ok := r.down[k]; ok {
				out = append(out, admin.Reason{General: whyUnreachable, Detail: why})
			}
			if why, ok := r.shade[k]; ok {
				out = append(out, admin.Reason{General: whyShade, Detail: why, Degraded: true})
			}
		}
	}
	r.mu.Unlock()
	for _, s := range r.fleet.ns {
		if st := s.Dual.Stats(); st.Journal && !st.JournalOK && st.JournalErrors > 0 {
			out = append(out, admin.Reason{General: whyJournal, Detail: fmt.Sprintf("durable state: the settle journal of namespace %s cannot commit (%d failed commits); its unsettled keys would not survive a crash", s.ID, st.JournalErrors)})
		}
	}
	return out
}

// isReady reports whether no reason takes the traffic away.
func isReady(reasons []admin.Reason) bool {
	for _, r := range reasons {
		if !r.Degraded {
			return false
		}
	}
	return true
}
