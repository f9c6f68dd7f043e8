package proxy_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/keep"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/service/admin"
)

// Two instances in live over one primary and one shadow database: a late
// tee copy that reaches a, acknowledged before b wrote its key, never
// overwrites b's write in MongoDB, and a reports it as a conflict naming
// until when b may have written. Alone, a would have applied it: the key
// is outside a's settle set, and a has run for longer than the consistency
// window, so the copy is newer than anything a wrote. The conflict is
// recorded in the control ledger: b lists it, and a does after a restart.
func TestALateCopyNeverOverwritesAnotherInstancesWrite(t *testing.T) {
	em := newEmulator(t, nil)
	db := srv.Database(t)
	env := em.environment(db)
	const window = 3 * time.Second
	timing := []string{"--poll-interval", "100ms", "--heartbeat-interval", "100ms", "--repair-interval", "1h",
		"--stage", "live", "--consistency-window", window.String(), "--ingest-max-lead", "200ms",
		// Within a fence interval of the flip (here, of the start in
		// live) an isolate may still write its binding: its copy is
		// credible.
		"--fence-interval", "65s"}
	started := time.Now()
	a := startInProcess(t, env, append(timing, "--instance", "a"))
	b := startInProcess(t, env, append(timing, "--instance", "b"))
	eventually(t, "a to see b's heartbeat", func() bool { return a.stage(t).Self.PeersUntil != nil })
	time.Sleep(time.Until(started.Add(window + 100*time.Millisecond)))

	// A stray isolate writes its binding; b writes the key after it.
	const key = "wordle:late"
	acked := time.Now()
	if err := em.store.Put(context.Background(), key, []byte("binding"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // beyond the clocks' trust
	if err := b.client(t, nil).Put(t.Context(), key, []byte("through-b"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	// b's copy of its write reaches Workers KV; the isolate's, delayed,
	// reaches a after it.
	eventually(t, "b's write to reach Workers KV", func() bool {
		v, err := em.store.Get(context.Background(), key)
		return err == nil && string(v) == "through-b"
	})
	a.ingest(t, key, "binding", acked)

	v, err := shadowStore(t, db, nil).Get(t.Context(), key)
	if err != nil || string(v) != "through-b" {
		t.Fatalf("MongoDB holds %q, %v: the late copy overwrote b's newer write", v, err)
	}
	var out admin.ConflictsView
	if code := a.call(t, "GET", "/conflicts", "", &out); code != 200 {
		t.Fatalf("GET /conflicts: %d", code)
	}
	list := out.Namespaces[namespace]
	if list.Total != 1 || len(list.Conflicts) != 1 || list.Conflicts[0].Outcome != "conflict" || list.Conflicts[0].PeersUntil.Before(acked) {
		t.Fatalf("a's conflicts: %+v", list)
	}
	if late := a.stats(t).Namespaces[namespace].LateCopies; late["conflict"] != 1 || late["applied"] != 0 {
		t.Fatalf("a's late copies: %v", late)
	}

	// The conflict is recorded beside the stage document: b lists it,
	// naming a, and so does a after a restart, which empties its own list.
	recorded := func(in *instance) []admin.RecordedConflict {
		var out admin.ConflictsView
		if code := in.call(t, "GET", "/conflicts", "", &out); code != 200 || out.Unrecorded != 0 {
			t.Fatalf("GET /conflicts: %d, %d unrecorded", code, out.Unrecorded)
		}
		if r := out.Namespaces[namespace].Recorded; r != nil && r.Error == "" {
			return r.Conflicts
		}
		return nil
	}
	eventually(t, "b to list a's conflict", func() bool {
		r := recorded(b)
		return len(r) == 1 && r[0].Instance == "a" && r[0].Key == list.Conflicts[0].Key && r[0].Copy == list.Conflicts[0].Copy
	})
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	a = startInProcess(t, env, append(timing, "--instance", "a"))
	var after admin.ConflictsView
	a.call(t, "GET", "/conflicts", "", &after)
	if l := after.Namespaces[namespace]; l.Total != 0 || len(recorded(a)) != 1 {
		t.Fatalf("a after its restart: %d of its own, recorded %+v", l.Total, l.Recorded)
	}

	// The copy was kept, in MongoDB beside the record: the operator decides
	// for it on b, which writes it back through its store to both stores,
	// across a's restart; the decision is listed, and taken once.
	rec := recorded(b)[0]
	if rec.Kept == "" || rec.Stands != "shadow" || rec.Decision != nil {
		t.Fatalf("the record before the decision: %+v", rec)
	}
	ac := b.adminClient()
	decided, err := ac.Decide(t.Context(), rec.ID, keep.Copy, false)
	if err != nil || decided.Decision == nil || !decided.Decision.Restored || decided.Decision.Instance != "b" {
		t.Fatalf("POST /conflicts/%s: %+v, %v", rec.ID, decided.Decision, err)
	}
	eventually(t, "the kept copy in both stores", func() bool {
		m, err1 := shadowStore(t, db, nil).Get(t.Context(), key)
		w, err2 := em.store.Get(context.Background(), key)
		return err1 == nil && err2 == nil && string(m) == "binding" && string(w) == "binding"
	})
	if r := recorded(a); len(r) != 1 || r[0].Decision == nil || r[0].Decision.Keep != "copy" {
		t.Fatalf("a lists the record as %+v", r)
	}
	var refusal *admin.Error
	if _, err := ac.Decide(t.Context(), rec.ID, keep.Shadow, false); !errors.As(err, &refusal) || refusal.Status != 409 {
		t.Fatalf("a second decision: %v, want 409", err)
	}
}
