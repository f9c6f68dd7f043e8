package service

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/kv"
)

// postReconciliation sends POST /reconciliation as an operator's curl does.
func (r *running) postReconciliation(t *testing.T, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "POST", r.admin+"reconciliation", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+r.c.secrets.admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("POST /reconciliation answered %d with %q", resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

// TestReconciliationClearedByAPassingFullReport: an overflowed settle set
// is recorded in the ledger; POST /reconciliation refuses an unknown
// report, one that started before the overflow, one that did not pass and
// (after a restart on the journal, which keeps the flag) one that started
// before the restart; it clears the flag for a full passing report that saw
// the overflow as it is, and /stats says which report cleared it.
func TestReconciliationClearedByAPassingFullReport(t *testing.T) {
	dir := t.TempDir()
	ledger := control.NewMemoryLedger()
	useLedger := func(b *Backends) { b.Ledger = ledger }
	args := []string{"--journal-dir", dir, "--max-settle-keys", "2", "--heartbeat-interval", "20ms"}
	r := startWith(t, useLedger, args...)
	ctx := context.Background()
	ns, db := DemoNamespace, databaseOf(r.c.Namespaces[0])

	before := control.ReportRun{ID: control.NewID(), StartedAt: time.Now(), FinishedAt: time.Now(), Namespace: ns, Database: db,
		Parity: 100, MinParity: 100, Passed: true}
	if err := ledger.RecordReport(ctx, before); err != nil {
		t.Fatal(err)
	}
	if code, out := r.postReconciliation(t, `{"report":"`+before.ID+`"}`); code != http.StatusConflict || !strings.Contains(out["error"].(string), "needs no reconciliation") {
		t.Fatalf("nothing to clear: %d %v", code, out)
	}

	cl := r.client(t, ns)
	r.shadows[ns].SetOutage(true)
	for _, k := range []string{"wordle:a", "wordle:b", "wordle:c", "wordle:d"} {
		if err := cl.Put(t.Context(), k, []byte("v"), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var open []control.Overflow
	eventually(t, "the overflow recorded", func() bool {
		open, _ = ledger.OpenOverflows(ctx, ns)
		return r.stats(t).Summary.ReconciliationNeeded && len(open) == 1
	})
	if rec := r.stats(t).Reconciliation[ns]; !rec.Needed || rec.Overflow != open[0].ID || rec.ClearedBy != "" {
		t.Fatalf("/stats reconciliation %+v", rec)
	}

	for _, c := range []struct{ body, want string }{
		{`{"report":"no-such-run"}`, "no such report run"},
		{`{"report":"` + before.ID + `"}`, "started before overflow " + open[0].ID + " was recorded"},
		{`{"namespace":"nope","report":"` + before.ID + `"}`, "no such namespace"},
		{`{}`, `want {"namespace"`},
	} {
		code, out := r.postReconciliation(t, c.body)
		if code < 400 || !strings.Contains(out["error"].(string), c.want) {
			t.Errorf("%s: %d %v, want %q", c.body, code, out, c.want)
		}
	}
	failed := before
	failed.ID, failed.Passed, failed.Parity = control.NewID(), false, 97.5
	failed.Overflows = []control.SeenOverflow{{ID: open[0].ID, Growth: open[0].Growth}}
	sawIt := failed
	sawIt.ID, sawIt.Passed, sawIt.Parity = control.NewID(), true, 100
	for _, run := range []control.ReportRun{failed, sawIt} {
		if err := ledger.RecordReport(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	if code, out := r.postReconciliation(t, `{"report":"`+failed.ID+`"}`); code != http.StatusConflict || !strings.Contains(out["error"].(string), "did not pass at 100% parity") {
		t.Fatalf("a failed report: %d %v", code, out)
	}

	// A restart on the journal keeps the flag, and the keys lost before it
	// are not counted: a report from before the restart no longer clears.
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	r = startWith(t, useLedger, args...)
	if !r.stats(t).Summary.ReconciliationNeeded {
		t.Fatal("the restart lost the flag")
	}
	if code, out := r.postReconciliation(t, `{"report":"`+sawIt.ID+`"}`); code != http.StatusConflict || !strings.Contains(out["error"].(string), "last grew") {
		t.Fatalf("a report from before the restart: %d %v", code, out)
	}
	open, _ = ledger.OpenOverflows(ctx, ns)
	after := sawIt
	after.ID = control.NewID()
	after.Overflows = []control.SeenOverflow{{ID: open[0].ID, Growth: open[0].Growth}}
	if err := ledger.RecordReport(ctx, after); err != nil {
		t.Fatal(err)
	}
	code, out := r.postReconciliation(t, `{"namespace":"`+ns+`","report":"`+after.ID+`"}`)
	if code != http.StatusOK {
		t.Fatalf("a passing report after the overflow: %d %v", code, out)
	}
	st := r.stats(t)
	if rec := st.Reconciliation[ns]; st.Summary.ReconciliationNeeded || rec.Needed || rec.ClearedBy != after.ID || rec.ClearedAt == nil || rec.Overflow != open[0].ID {
		t.Fatalf("after the clear: needed %v, /stats reconciliation %+v", st.Summary.ReconciliationNeeded, rec)
	}
	if last, _, _ := ledger.LastOverflow(ctx, r.c.Instance, ns); last.ClearedBy != after.ID {
		t.Fatalf("the ledger's record %+v", last)
	}
	if code, out := r.postReconciliation(t, `{"report":"`+after.ID+`"}`); code != http.StatusConflict || !strings.Contains(out["error"].(string), "needs no reconciliation") {
		t.Fatalf("a second clear: %d %v", code, out)
	}
}
