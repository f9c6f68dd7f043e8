package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/keep"
)

// DefaultConflictLimit is how many recorded conflicts GET /conflicts lists
// a namespace without ?limit=.
const DefaultConflictLimit = 256

// conflicts lists each namespace's latest late copies that conflicted with
// the authoritative store: this instance's since it started, and every
// instance's recorded in the control ledger. Redacted keys, digests and
// times, never values.
func (h *Handler) conflicts(w http.ResponseWriter, r *http.Request) {
	limit, ok := limitOf(w, r, DefaultConflictLimit, "records")
	if !ok {
		return
	}
	out := ConflictsView{Namespaces: map[string]ConflictList{}}
	if h.cfg.Unrecorded != nil {
		out.Unrecorded = h.cfg.Unrecorded()
	}
	for _, ns := range h.cfg.Namespaces {
		recs, total := ns.Store.Conflicts()
		if recs == nil {
			recs = []dualwrite.Conflict{}
		}
		l := ConflictList{Total: total, Conflicts: recs}
		if h.cfg.Recorded != nil {
			l.Recorded = recordedOf(r.Context(), h.cfg.Recorded, ns.ID, limit)
		}
		out.Namespaces[ns.ID] = l
	}
	writeJSON(w, http.StatusOK, out)
}

func recordedOf(ctx context.Context, ledger control.ConflictLedger, namespace string, limit int) *RecordedConflicts {
	ctx, cancel := context.WithTimeout(ctx, control.DefaultBoardTimeout)
	defer cancel()
	recs, total, err := ledger.Conflicts(ctx, namespace, limit)
	out := &RecordedConflicts{Total: total, Conflicts: []RecordedConflict{}}
	if err == nil {
		out.Undecided, err = ledger.Undecided(ctx, namespace)
	}
	if err != nil {
		out.Error = err.Error()
		return out
	}
	for _, c := range recs {
		out.Conflicts = append(out.Conflicts, recordedView(c))
	}
	return out
}

// Decider carries out an operator's decision for a recorded conflict: a
// *keep.Decider.
type Decider interface {
	Decide(ctx context.Context, id string, side keep.Side, force bool) (control.ConflictRecord, error)
}

// decide serves POST /conflicts/ID {"keep": "copy"|"shadow", "force"}: the
// side that stands is kept as it is; the other, kept since the conflict,
// is written back through the namespace's store, unless the key was
// written since (409, unless force).
func (h *Handler) decide(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Decider == nil {
		writeError(w, http.StatusNotFound, "this instance keeps no conflicts to decide")
		return
	}
	var req struct {
		Keep  string `json:"keep"`
		Force bool   `json:"force"`
	}
	if err := decodeStrict(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	side, err := keep.ParseSide(req.Keep)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error()+`: want {"keep": "copy"} or {"keep": "shadow"}, the side of GET /conflicts that should stand`)
		return
	}
	rec, err := h.cfg.Decider.Decide(r.Context(), r.PathValue("id"), side, req.Force)
	switch {
	case errors.Is(err, control.ErrNoConflict):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, control.ErrDecided), errors.Is(err, keep.ErrGone), errors.Is(err, keep.ErrNotServed):
		writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error(), "conflict": recordedView(rec)})
	case errors.Is(err, keep.ErrWrittenSince):
		writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error() + `: read the key, and decide again with "force": true to overwrite it`, "conflict": recordedView(rec)})
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, err.Error())
	default:
		writeJSON(w, http.StatusOK, map[string]any{"conflict": recordedView(rec)})
	}
}

// recordedView renders a ledger record.
func recordedView(c control.ConflictRecord) RecordedConflict {
	return RecordedConflict{ID: c.ID, Instance: c.Instance, KVNamespace: c.KVNamespace, Conflict: c.Conflict, Stands: keep.Standing(c.Outcome), Decision: c.Decision}
}

// decidedAll holds the move to complete, one way, while a recorded conflict
// of a served namespace is undecided, or the ledger cannot say: once
// complete, Workers KV is neither written nor read, and what stands in
// MongoDB is the bot's. It answers 409 and returns false when it holds.
func (h *Handler) decidedAll(ctx context.Context, w http.ResponseWriter) bool {
	if h.cfg.Recorded == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, control.DefaultBoardTimeout)
	defer cancel()
	undecided := map[string]int64{}
	for _, ns := range h.cfg.Namespaces {
		n, err := h.cfg.Recorded.Undecided(ctx, ns.ID)
		if err != nil {
			writeError(w, http.StatusConflict, fmt.Sprintf("complete is one-way, and the conflict ledger cannot say whether every late copy is decided (%v): "+
				`try again, or move with {"stage": "complete", "confirm_irreversible": true, "accept_undecided": true}`, err))
			return false
		}
		if n > 0 {
			undecided[ns.ID] = n
		}
	}
	if len(undecided) == 0 {
		return true
	}
	writeJSON(w, http.StatusConflict, map[string]any{
		"error": `complete is one-way, and late copies are undecided: decide each listed by GET /conflicts (recorded) with POST /conflicts/ID, ` +
			`or move with {"stage": "complete", "confirm_irreversible": true, "accept_undecided": true} to let what stands stand`,
		"undecided": undecided, "stage": h.cfg.Stager.Status().Document.Stage.String(), "generation": h.cfg.Stager.Status().Document.Generation})
	return false
}
