package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/keep"
)

// fakeDecider answers with err, or the record decided.
type fakeDecider struct {
	err   error
	asked []string
}

func (f *fakeDecider) Decide(_ context.Context, id string, side keep.Side, force bool) (control.ConflictRecord, error) {
	f.asked = append(f.asked, fmt.Sprintf("%s %s %v", id, side, force))
	rec := control.ConflictRecord{ID: id, KVNamespace: "ns0"}
	rec.Outcome = dualwrite.LateConflict
	if f.err == nil {
		rec.Decision = &control.Decision{Keep: string(side), Restored: side == keep.Copy, Forced: force}
	}
	return rec, f.err
}

// POST /conflicts/ID takes a side by its name and answers each refusal
// with its status: 404 for no record, 409 for what the operator must look
// at again, 503 for a ledger out of reach, 400 for a side of no name.
func TestDecideAnswersEachRefusal(t *testing.T) {
	d := &fakeDecider{}
	h := newHandler(t, &fakeStager{}, &fakeStore{})
	if w := do(h, "POST", "/conflicts/c1", `{"keep":"copy"}`, true); w.Code != http.StatusNotFound {
		t.Fatalf("without a Decider: %d", w.Code)
	}
	h.cfg.Decider = d
	w := do(h, "POST", "/conflicts/c1", `{"keep":"copy","force":true}`, true)
	var out struct {
		Conflict RecordedConflict `json:"conflict"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || w.Code != http.StatusOK ||
		out.Conflict.Decision == nil || !out.Conflict.Decision.Restored || out.Conflict.Stands != keep.Shadow {
		t.Fatalf("a decision: %d %s", w.Code, w.Body.String())
	}
	if d.asked[0] != "c1 copy true" {
		t.Fatalf("asked %q", d.asked)
	}
	for _, c := range []struct {
		err  error
		body string
		code int
	}{
		{control.ErrNoConflict, `{"keep":"copy"}`, http.StatusNotFound},
		{control.ErrDecided, `{"keep":"copy"}`, http.StatusConflict},
		{keep.ErrGone, `{"keep":"copy"}`, http.StatusConflict},
		{keep.ErrNotServed, `{"keep":"copy"}`, http.StatusConflict},
		{keep.ErrWrittenSince, `{"keep":"copy"}`, http.StatusConflict},
		{control.ErrBoard, `{"keep":"copy"}`, http.StatusServiceUnavailable},
		{nil, `{"keep":"mongodb"}`, http.StatusBadRequest},
		{nil, `{"keep":"copy","extra":1}`, http.StatusBadRequest},
	} {
		d.err = c.err
		if w := do(h, "POST", "/conflicts/c1", c.body, true); w.Code != c.code {
			t.Errorf("%v, %s: %d, want %d: %s", c.err, c.body, w.Code, c.code, w.Body.String())
		}
	}
	if w := do(h, "POST", "/conflicts/c1", `{"keep":"copy"}`, false); w.Code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", w.Code)
	}
}

// The move to complete, one-way, waits while a recorded conflict of a
// served namespace is undecided, or the ledger cannot say, unless the
// operator accepts what stands; a decided ledger lets it through.
func TestCompleteWaitsForEveryDecision(t *testing.T) {
	st := &fakeStager{status: control.Status{Document: control.Document{Stage: dualwrite.Rampdown, Generation: 7}},
		change: control.Change{Applied: true}}
	h := newHandler(t, st, &fakeStore{})
	ledger := control.NewMemoryLedger()
	h.cfg.Recorded = ledger
	rec := control.ConflictRecord{ID: "c1", KVNamespace: "ns0"}
	rec.Outcome, rec.Received = dualwrite.LateConflict, time.Now()
	if err := ledger.RecordConflict(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	w := do(h, "PUT", "/stage", `{"stage":"complete","confirm_irreversible":true}`, true)
	if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), `"ns0": 1`) || len(st.asked) != 0 {
		t.Fatalf("complete with a conflict undecided: %d %s, asked %v", w.Code, w.Body.String(), st.asked)
	}
	if w := do(h, "PUT", "/stage", `{"stage":"live"}`, true); w.Code != http.StatusOK || len(st.asked) != 1 {
		t.Fatalf("another stage is not held: %d %s", w.Code, w.Body.String())
	}
	if w := do(h, "PUT", "/stage", `{"stage":"complete","confirm_irreversible":true,"accept_undecided":true}`, true); w.Code != http.StatusOK || st.asked[1] != dualwrite.Complete {
		t.Fatalf("accepting what stands: %d %s", w.Code, w.Body.String())
	}
	if err := ledger.Decide(t.Context(), "c1", control.Decision{Keep: "shadow"}); err != nil {
		t.Fatal(err)
	}
	if w := do(h, "PUT", "/stage", `{"stage":"complete","confirm_irreversible":true}`, true); w.Code != http.StatusOK || st.asked[2] != dualwrite.Complete {
		t.Fatalf("every conflict decided: %d %s", w.Code, w.Body.String())
	}
	h.cfg.Recorded = brokenLedger{ledger}
	if w := do(h, "PUT", "/stage", `{"stage":"complete","confirm_irreversible":true}`, true); w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "cannot say") {
		t.Fatalf("a ledger out of reach: %d %s", w.Code, w.Body.String())
	}
}

type brokenLedger struct{ *control.MemoryLedger }

func (brokenLedger) Undecided(context.Context, string) (int64, error) { return 0, control.ErrBoard }
