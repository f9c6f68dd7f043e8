package ingest_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/ingest"
	"github.com/kvshadow/kvshadow/kv"
)

func TestDualWriteSinkAndStage(t *testing.T) {
	clk := clock.NewFake(start)
	primary, shadow := memory.New(memory.Config{Clock: clk}), memory.New(memory.Config{Clock: clk})
	st, err := dualwrite.New(dualwrite.Config{Primary: primary, Shadow: shadow, Stage: dualwrite.DualWrite}, dualwrite.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	sink := &ingest.DualWrite{Account: "acc", Lease: 1500 * time.Millisecond, Stores: func(ns string) (*dualwrite.Store, bool) { return st, ns == "ns" }}
	h := newHandler(t, sink, func(c *ingest.Config) { c.Stage = sink })
	body := fmt.Sprintf(`{"copies":[{"key":"wordle:a","value":"dg==","expiration":%d,"acked_at":%d},{"key":"wordle:b","value":"dw==","acked_at":%d},{"key":"wordle:b","deleted":true,"acked_at":%d}]}`,
		start.Unix()+600, ms-2, ms-1, ms)
	if w := post(t, h, body); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"copies":3`) {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	// DualWrite compares no reads: they are ignored, the copies taken.
	read := fmt.Sprintf(`"reads":[{"key":"wordle:a","found":false,"read_at":%d}]}`, ms)
	if w := post(t, h, strings.Replace(body, `]}`, `],`+read, 1)); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"copies":3,"reads":0,"reads_ignored":1`) {
		t.Fatalf("reads in DualWrite: status %d: %s", w.Code, w.Body)
	}
	if err := st.Close(context.Background()); err != nil { // drains the lanes
		t.Fatal(err)
	}
	e, err := shadow.GetEntry(context.Background(), "wordle:a")
	if err != nil || string(e.Value) != "v" || !e.Expiration.Equal(start.Add(600*time.Second)) {
		t.Fatalf("shadow wordle:a = %q, %v, %v", e.Value, e.Expiration, err)
	}
	if _, err := shadow.Get(context.Background(), "wordle:b"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("shadow wordle:b: %v, want it deleted by its later copy", err)
	}
	if w := post(t, h, strings.Replace(body, `{"copies"`, `{"namespace":"other","copies"`, 1)); w.Code != http.StatusNotFound {
		t.Fatalf("unknown namespace: status %d", w.Code)
	}

	// From Live on, the shadow is authoritative: copies are late, taken
	// and counted (never dropped), reads refused with 409, and the stage
	// says so.
	live, err := dualwrite.New(dualwrite.Config{Primary: primary, Shadow: shadow, Stage: dualwrite.Live}, dualwrite.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = live.Close(context.Background()) }()
	sink.Stores = func(string) (*dualwrite.Store, bool) { return live, true }
	if w := post(t, h, body); w.Code != http.StatusOK {
		t.Fatalf("copies in Live: status %d: %s", w.Code, w.Body)
	}
	var late uint64
	for _, n := range live.Stats().LateCopies {
		late += n
	}
	if late != 3 {
		t.Fatalf("late copies %v", live.Stats().LateCopies)
	}
	if w := post(t, h, "{"+read); w.Code != http.StatusConflict {
		t.Fatalf("reads in Live: status %d: %s", w.Code, w.Body)
	}
	a, err := sink.Authority(context.Background(), "ns")
	if err != nil || !a.ShadowAuthoritative || a.Stage != "live" || a.Account != "acc" || a.Namespace != "ns" {
		t.Fatalf("Authority in Live = %+v, %v", a, err)
	}
	req := httptest.NewRequest(http.MethodGet, "/kvshadow/v1/stage", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	var got map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got["authoritative"] != "shadow" || got["stage"] != "live" || got["route"] != "proxy" || got["lease_ms"] != 1500.0 {
		t.Fatalf("stage endpoint: %s (%v); want the proxy's lease in lease_ms", w.Body, err)
	}
}

// In the Shadow stage the tee's reads are compared with the shadow by
// digest: one that agrees is a match, one that MongoDB contradicts is
// suspected, and the answer counts both as compared.
func TestDualWriteComparesReads(t *testing.T) {
	clk := clock.NewFake(start)
	primary, shadow := memory.New(memory.Config{Clock: clk}), memory.New(memory.Config{Clock: clk})
	st, err := dualwrite.New(dualwrite.Config{Primary: primary, Shadow: shadow, Stage: dualwrite.Shadow, CompareRate: 1, RepairInterval: time.Hour}, dualwrite.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, s := range []*memory.Store{primary, shadow} {
		must(t, s.Put(ctx, "wordle:same", []byte("v"), kv.PutOptions{}))
	}
	must(t, primary.Put(ctx, "wordle:other", []byte("v"), kv.PutOptions{}))
	must(t, shadow.Put(ctx, "wordle:other", []byte("changed"), kv.PutOptions{}))
	sink := &ingest.DualWrite{Stores: func(string) (*dualwrite.Store, bool) { return st, true }}
	h := newHandler(t, sink, nil)
	sum := sha256.Sum256([]byte("v"))
	body := fmt.Sprintf(`{"reads":[{"key":"wordle:same","found":true,"sha256":"%x","length":1,"read_at":%d},{"key":"wordle:other","found":true,"sha256":"%x","length":1,"read_at":%d}]}`, sum, ms, sum, ms)
	if w := post(t, h, body); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"reads":2,"reads_ignored":0`) {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	must(t, st.Close(ctx)) // drains the lanes
	s := st.Stats()
	if s.TeeReads != 2 || s.Comparisons[compare.Match] != 1 || s.Comparisons[compare.Suspected] != 1 || s.Suspects != 1 || s.Unsettled != 0 || s.Divergences() != 0 {
		t.Fatalf("tee reads %d, comparisons %v, suspects %d, unsettled %d", s.TeeReads, s.Comparisons, s.Suspects, s.Unsettled)
	}
}

// A flood of read digests of keys never written, through the endpoint,
// fills only the bounded suspects: the settle set keeps its slots for
// writes, reconciliation is not flagged, the written keys settle and the
// flip to live goes through. Verification clears the suspects, whose keys
// neither store has.
func TestReadFloodLeavesTheSettleSetAlone(t *testing.T) {
	clk := clock.NewFake(start)
	primary, shadow := memory.New(memory.Config{Clock: clk}), memory.New(memory.Config{Clock: clk})
	st, err := dualwrite.New(dualwrite.Config{
		Primary: primary, Shadow: shadow, Stage: dualwrite.Shadow, CompareRate: 1,
		RepairInterval: time.Hour, MaxDirty: 50, MaxSuspects: 20,
	}, dualwrite.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	ctx := context.Background()
	for i := range 10 {
		must(t, st.Put(ctx, fmt.Sprintf("wordle:w%d", i), []byte("v"), kv.PutOptions{}))
	}
	sink := &ingest.DualWrite{Stores: func(string) (*dualwrite.Store, bool) { return st, true }}
	h := newHandler(t, sink, nil)
	const flood = 3000
	for b := 0; b < flood; b += 1000 {
		var reads []string
		for i := b; i < b+1000; i++ {
			sum := sha256.Sum256([]byte(fmt.Sprint(i)))
			reads = append(reads, fmt.Sprintf(`{"key":"wordle:never%d","found":true,"sha256":"%x","length":4,"read_at":%d}`, i, sum, ms))
		}
		if w := post(t, h, `{"reads":[`+strings.Join(reads, ",")+`]}`); w.Code != http.StatusOK {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		must(t, st.Flush(ctx))
	}
	s := st.Stats()
	if s.Unsettled != 10 || s.Dirty != 0 || s.DirtyOverflow != 0 || s.ReconciliationNeeded {
		t.Fatalf("after the flood: unsettled %d, dirty %d, overflow %d, reconciliation needed %v", s.Unsettled, s.Dirty, s.DirtyOverflow, s.ReconciliationNeeded)
	}
	if compared := s.Comparisons[compare.Suspected] + s.ComparisonsSkipped; s.Suspects != 20 || s.SuspectOverflow+20 != compared || compared != flood {
		t.Fatalf("suspects %d, dropped %d, suspected %d, skipped %d; want 20 kept of %d", s.Suspects, s.SuspectOverflow, s.Comparisons[compare.Suspected], s.ComparisonsSkipped, flood)
	}
	clk.Advance(dualwrite.DefaultConsistencyWindow)
	if n, err := st.Settle(ctx); err != nil || n != 30 {
		t.Fatalf("Settle = %d, %v; want the 10 written keys and the 20 suspects", n, err)
	}
	if s := st.Stats(); s.Unsettled+s.Dirty+s.Suspects != 0 || s.Divergences() != 0 {
		t.Fatalf("after settling: unsettled %d, dirty %d, suspects %d, divergences %d", s.Unsettled, s.Dirty, s.Suspects, s.Divergences())
	}
	must(t, st.SetStage(ctx, dualwrite.Handover))
	// The handover fence, then its full comparison, which a refused flip
	// asks for.
	clk.Advance(dualwrite.DefaultFenceInterval + 2*dualwrite.DefaultConsistencyWindow)
	err = st.SetStage(ctx, dualwrite.Live)
	for deadline := time.Now().Add(10 * time.Second); err != nil && time.Now().Before(deadline); err = st.SetStage(ctx, dualwrite.Live) {
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("flip after the flood: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
