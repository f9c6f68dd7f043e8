package proxy_test

import (
	"context"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// Two instances in live over one primary and one shadow database: a late
// tee copy that reaches a, acknowledged before b wrote its key, never
// overwrites b's write in MongoDB: a counts it as a conflict, since Workers
// KV holds b's write, not the copy's, though the key is outside a's settle
// set and the copy is newer than anything a wrote.
func TestALateCopyNeverOverwritesAnotherInstancesWrite(t *testing.T) {
	em := newEmulator(t, nil)
	db := srv.Database(t)
	env := em.environment(db)
	const window = 3 * time.Second
	timing := []string{"--poll-interval", "100ms", "--heartbeat-interval", "100ms", "--repair-interval", "1h",
		"--stage", "live", "--new-pairing", "--consistency-window", window.String(), "--ingest-max-lead", "200ms",
		// Within a fence interval of the flip (here, of the start in
		// live) an isolate may still write its binding: its copy is
		// credible.
		"--fence-interval", "65s"}
	started := time.Now()
	a := startInProcess(t, env, append(timing, "--instance", "a"))
	b := startInProcess(t, env, append(timing, "--instance", "b"))
	eventually(t, "a to see b's heartbeat", func() bool {
		for _, h := range a.stage(t).Instances {
			if h.Instance == "b" && h.Alive {
				return true
			}
		}
		return false
	})
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
	if late := a.stats(t).Namespaces[namespace].LateCopies; late["conflict"] != 1 || late["applied"] != 0 {
		t.Fatalf("a's late copies: %v", late)
	}
}
