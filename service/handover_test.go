package service

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

func copyBatch(key, value string, acked time.Time) string {
	return fmt.Sprintf(`{"namespace":%q,"copies":[{"key":%q,"value":%q,"acked_at":%d}]}`,
		DemoNamespace, key, value, acked.UnixMilli())
}

// Through raw HTTP: a copy ingested just before the flip, with a value
// Workers KV never had, does not become authoritative unverified: the
// flip waits for its verification, which brings MongoDB level with Workers
// KV, and the front then serves Workers KV's value.
func TestACopyJustBeforeTheFlipIsVerifiedFirst(t *testing.T) {
	r := start(t, "--stage", "handover", "--heartbeat-interval", "100ms")
	ctx := t.Context()
	cl := r.client(t, DemoNamespace)
	// The bot's binding wrote it to Workers KV.
	if err := r.primary[DemoNamespace].Inner().Put(ctx, "wordle:real", []byte("real"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	// "cHJvYmU=" is "probe": a value the primary never held.
	if code, body := r.tee(t, TeePath+"ingest", copyBatch("wordle:real", "cHJvYmU=", time.Now())); code != http.StatusOK {
		t.Fatalf("ingest: %d %s", code, body)
	}
	eventually(t, "the probe's copy in the shadow", func() bool {
		v, err := r.shadows[DemoNamespace].Inner().Get(ctx, "wordle:real")
		return err == nil && string(v) == "probe"
	})
	var refused map[string]any
	if code := r.call(t, "PUT", "/stage", `{"stage":"live"}`, &refused); code != http.StatusConflict ||
		!strings.Contains(fmt.Sprint(refused["error"]), "1 keys last written by a binding copy or reloaded from the journal, not verified yet") {
		t.Fatalf("PUT live with an unverified copy: %d %v", code, refused)
	}
	if s := r.stats(t).Total.Fence; s.Clear || s.IngestUnverified != 1 || s.RemainingSeconds <= 0 {
		t.Fatalf("fence in /stats: %+v", s)
	}
	eventually(t, "the flip, once the copy is verified", func() bool {
		r.call(t, "POST", "/repair", "", nil)
		return r.call(t, "PUT", "/stage", `{"stage":"live"}`, nil) == http.StatusOK
	})
	v, err := cl.Get(ctx, "wordle:real")
	if err != nil || string(v) != "real" {
		t.Fatalf("the front in live serves %q, %v; want Workers KV's value", v, err)
	}
}

// Through raw HTTP: a replayed copy with an acked_at an hour old, and one
// stamped four minutes ahead, are refused and counted, change nothing, and
// do not make the real copy be dropped as stale.
func TestReplayedAndFutureCopiesChangeNothing(t *testing.T) {
	r := start(t, "--stage", "shadow")
	ctx := t.Context()
	cl := r.client(t, DemoNamespace)
	shadow := r.shadows[DemoNamespace].Inner()
	if err := cl.Put(ctx, "wordle:r", []byte("new"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the copy", func() bool { v, err := shadow.Get(ctx, "wordle:r"); return err == nil && string(v) == "new" })
	now := time.Now()
	for _, b := range []string{
		copyBatch("wordle:r", "b2xk", now.Add(-time.Hour)),        // "old"
		copyBatch("wordle:f", "Zm9yZ2Vk", now.Add(4*time.Minute)), // "forged"
	} {
		if code, body := r.tee(t, TeePath+"ingest", b); code != http.StatusOK {
			t.Fatalf("ingest: %d %s", code, body)
		}
	}
	// The real write of f, acknowledged now.
	if err := r.primary[DemoNamespace].Inner().Put(ctx, "wordle:f", []byte("real"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, body := r.tee(t, TeePath+"ingest", copyBatch("wordle:f", "cmVhbA==", time.Now())); code != http.StatusOK {
		t.Fatalf("ingest: %d %s", code, body)
	}
	eventually(t, "the real copy of f", func() bool { v, err := shadow.Get(ctx, "wordle:f"); return err == nil && string(v) == "real" })
	if v, err := shadow.Get(ctx, "wordle:r"); err != nil || string(v) != "new" {
		t.Fatalf("the replayed copy reached the shadow: %q, %v", v, err)
	}
	s := r.stats(t).Total
	if s.IngestRefused["acked_at_past"] != 1 || s.IngestRefused["acked_at_future"] != 1 || s.IngestStale != 0 {
		t.Fatalf("refused %v, stale %d", s.IngestRefused, s.IngestStale)
	}
	metrics := r.scrape(t)
	for _, want := range []string{`kvshadow_ingest_refused_total{`, `kvshadow_refusal_reason="acked_at_past"`, `kvshadow_handover_fence_remaining_seconds`, `kvshadow_ingest_late_copies_total{`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	// A key that is not valid UTF-8 is refused whole, and counted.
	raw := fmt.Sprintf(`{"namespace":%q,"copies":[{"key":"wordle:`+"\xff"+`","value":"dg==","acked_at":%d}]}`, DemoNamespace, time.Now().UnixMilli())
	if code, body := r.tee(t, TeePath+"ingest", raw); code != http.StatusBadRequest || !strings.Contains(body, "invalid_key") {
		t.Fatalf("an invalid key: %d %s", code, body)
	}
	if n := r.stats(t).Total.IngestRefused["invalid_key"]; n != 1 {
		t.Fatalf("invalid_key refusals %d", n)
	}
}
