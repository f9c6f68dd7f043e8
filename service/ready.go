package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/service/admin"
)

// probeKey is the key the readiness probe reads: a miss is the expected
// answer, and one request is what it costs the authoritative store.
const probeKey = "kvshadow-readiness-probe"

// probeTimeout bounds one probe.
const probeTimeout = 5 * time.Second

// readiness gathers the reasons the instance should get no traffic: it is
// draining, an authoritative store does not answer, or it lags behind the
// stage document. A shadow that fails is no reason: the callers never wait
// for it.
type readiness struct {
	fleet    *fleet
	follower *control.Follower
	draining atomic.Bool

	mu          sync.Mutex
	unreachable map[string]string // namespace -> why
}

// probe reads probeKey from each namespace's authoritative store, directly
// (not through the dual-write store, which would copy or compare).
func (r *readiness) probe(ctx context.Context) {
	found := map[string]string{}
	for _, s := range r.fleet.ns {
		role, st := dualwrite.RolePrimary, s.primary
		if s.dual.Stage() >= dualwrite.Live {
			role, st = dualwrite.RoleShadow, s.shadow
		}
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		_, err := st.Get(pctx, probeKey)
		cancel()
		if err != nil && !errors.Is(err, kv.ErrNotFound) {
			found[s.id] = fmt.Sprintf("the authoritative store (%s) of namespace %s does not answer: %s", role, s.id, compare.ErrorClass(err))
		}
	}
	r.mu.Lock()
	r.unreachable = found
	r.mu.Unlock()
}

// run probes every interval until ctx ends.
func (r *readiness) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.probe(ctx)
		}
	}
}

// The general words of each reason, which /readyz gives without a token.
const (
	whyDraining    = "draining: the service is shutting down"
	whyStage       = "stage: this instance does not yet run the stage document's generation"
	whyUnreachable = "an authoritative store does not answer"
	whyJournal     = "durable state: a settle journal cannot commit"
)

// reasons implements admin.Config.Ready.
func (r *readiness) reasons(context.Context) []admin.Reason {
	var out []admin.Reason
	if r.draining.Load() {
		out = append(out, admin.Reason{General: whyDraining})
	}
	if st := r.follower.Status(); !st.InSync() {
		lag := st.Lag
		if lag == "" {
			lag = fmt.Sprintf("runs generation %d, the stage document is at %d", st.Generation, st.Document.Generation)
		}
		out = append(out, admin.Reason{General: whyStage, Detail: "stage: " + lag})
	}
	r.mu.Lock()
	for _, s := range r.fleet.ns {
		if why, ok := r.unreachable[s.id]; ok {
			out = append(out, admin.Reason{General: whyUnreachable, Detail: why})
		}
	}
	r.mu.Unlock()
	for _, s := range r.fleet.ns {
		if st := s.dual.Stats(); st.Journal && !st.JournalOK && st.JournalErrors > 0 {
			out = append(out, admin.Reason{General: whyJournal, Detail: fmt.Sprintf("durable state: the settle journal of namespace %s cannot commit (%d failed commits); its unsettled keys would not survive a crash", s.id, st.JournalErrors)})
		}
	}
	return out
}
