package admin

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/kvshadow/kvshadow/control"
)

// Reconciler keeps the record of each namespace's overflowed settle set
// (the service's, in the control Ledger) and clears one with a report run.
type Reconciler interface {
	// Reconciliation is a namespace's last overflow as last recorded,
	// without I/O: for GET /stats.
	Reconciliation(namespace string) ReconciliationView
	// Clear clears the namespace's overflow with the report run of that ID.
	// Its errors match ErrUnknownNamespace, control.ErrNoRecord,
	// control.ErrNotReconciled or control.ErrBoard.
	Clear(ctx context.Context, namespace, report string) (ReconciliationView, error)
}

// ErrUnknownNamespace: the instance serves no namespace of that ID.
var ErrUnknownNamespace = errors.New("admin: no such namespace")

// ReconciliationView is a namespace's last settle-set overflow: open while
// Needed, else cleared by the report run ClearedBy.
type ReconciliationView struct {
	Needed bool `json:"needed"`
	// Overflow is the overflow's ID in the Ledger; empty when none.
	Overflow  string     `json:"overflow,omitempty"`
	RaisedAt  *time.Time `json:"raised_at,omitempty"`
	Growth    uint64     `json:"growth"`
	ClearedAt *time.Time `json:"cleared_at,omitempty"`
	ClearedBy string     `json:"cleared_by,omitempty"`
}

// ReconciliationOf renders an overflow record.
func ReconciliationOf(needed bool, o control.Overflow) ReconciliationView {
	return ReconciliationView{Needed: needed, Overflow: o.ID, RaisedAt: timePtr(o.RaisedAt), Growth: o.Growth, ClearedAt: timePtr(o.ClearedAt), ClearedBy: o.ClearedBy}
}

// clearReconciliation serves POST /reconciliation {"namespace", "report"}
// through the Reconciler (control.CheckClears).
func (h *Handler) clearReconciliation(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Reconciler == nil {
		writeError(w, http.StatusNotFound, "this instance keeps no record of overflows")
		return
	}
	var req struct {
		Namespace string `json:"namespace"`
		Report    string `json:"report"`
	}
	if err := decodeStrict(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Namespace == "" && len(h.cfg.Namespaces) == 1 {
		req.Namespace = h.cfg.Namespaces[0].ID
	}
	if req.Report == "" || req.Namespace == "" {
		writeError(w, http.StatusBadRequest, `want {"namespace": "<ID>", "report": "<run ID>"}: the ID shadow-report printed ("recorded run ..."); namespace may be left out when the instance serves one`)
		return
	}
	v, err := h.cfg.Reconciler.Clear(r.Context(), req.Namespace, req.Report)
	switch {
	case errors.Is(err, ErrUnknownNamespace), errors.Is(err, control.ErrNoRecord):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, control.ErrNotReconciled):
		writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error(), "reconciliation": v})
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, err.Error())
	default:
		writeJSON(w, http.StatusOK, map[string]any{"namespace": req.Namespace, "reconciliation": v})
	}
}
