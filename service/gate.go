package service

import (
	"encoding/json"
	"net/http"
	"sync/atomic"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/kvapi"
)

// whyNoStage is what a client is told while the instance started without
// the stage document and keeps no stage it may serve unverified.
const whyNoStage = "kvshadow-proxy does not know the migration stage: the control board (MongoDB) cannot be read and this instance " +
	"keeps no stage in which Workers KV is authoritative, so it serves nothing until MongoDB answers; retry shortly"

// stageGate holds the front's requests back (503, Retry-After) until the
// follower runs the stage document, when the instance started without it
// in a stage it may not serve unverified. Once open it stays open: from
// then on the follower's lag is readiness's business.
type stageGate struct {
	follower *control.Follower
	open     atomic.Bool
}

// newStageGate is a gate, open already unless closed is true.
func newStageGate(f *control.Follower, closed bool) *stageGate {
	g := &stageGate{follower: f}
	g.open.Store(!closed)
	return g
}

// opened reports whether requests pass, opening the gate once the
// follower has read the document and runs it.
func (g *stageGate) opened() bool {
	if g.open.Load() {
		return true
	}
	if st := g.follower.Status(); !st.Detached && st.InSync() {
		g.open.Store(true)
		return true
	}
	return false
}

// wrap puts the gate in front of h.
func (g *stageGate) wrap(h http.Handler) http.Handler {
	body, _ := json.Marshal(map[string]any{"success": false, "result": nil, "messages": []any{},
		"errors": []map[string]any{{"code": kvapi.CodeUnavailable, "message": whyNoStage}}})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.opened() {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write(body)
	})
}
