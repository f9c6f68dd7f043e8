package ingest_test

import (
	"context"
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
	sink := &ingest.DualWrite{Account: "acc", Stores: func(ns string) (*dualwrite.Store, bool) { return st, ns == "ns" }}
	h := newHandler(t, sink, func(c *ingest.Config) { c.Stage = sink })
	body := fmt.Sprintf(`{"copies":[{"key":"wordle:a","value":"dg==","expiration":%d,"acked_at":%d},{"key":"wordle:b","value":"dw==","acked_at":%d},{"key":"wordle:b","deleted":true,"acked_at":%d}]}`,
		start.Unix()+600, ms-2, ms-1, ms)
	if w := post(t, h, body); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"copies":3`) {
		t.Fatalf("status %d: %s", w.Code, w.Body)
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

	// From Live on, the shadow is authoritative: copies are refused with
	// 409 and the stage says so.
	live, err := dualwrite.New(dualwrite.Config{Primary: primary, Shadow: shadow, Stage: dualwrite.Live}, dualwrite.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = live.Close(context.Background()) }()
	sink.Stores = func(string) (*dualwrite.Store, bool) { return live, true }
	if w := post(t, h, body); w.Code != http.StatusConflict {
		t.Fatalf("copies in Live: status %d: %s", w.Code, w.Body)
	}
	a, err := sink.Authority(context.Background(), "ns")
	if err != nil || !a.ShadowAuthoritative || a.Stage != "live" || a.Account != "acc" || a.Namespace != "ns" {
		t.Fatalf("Authority in Live = %+v, %v", a, err)
	}
	req := httptest.NewRequest(http.MethodGet, "/kvshadow/v1/stage", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	var got map[string]string
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got["authoritative"] != "shadow" || got["stage"] != "live" {
		t.Fatalf("stage endpoint: %s (%v)", w.Body, err)
	}
}
