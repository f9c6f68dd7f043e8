package proxy_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// TestABackDatedCopyAfterTheFlipIsRefused: the command in live, past the
// fence interval after its flip, takes one batch of 1,000 tee copies with
// the clients' token, each back-dated to before the flip. Each is refused
// (acked_after_flip, counted), none reaches MongoDB, the batch is one line
// of the log, and the move to complete is not held back by them.
func TestABackDatedCopyAfterTheFlipIsRefused(t *testing.T) {
	bin := build(t)
	em := newEmulator(t, nil)
	db := srv.Database(t)
	const fence = 2 * time.Second
	p := startProcess(t, bin, em.environment(db), "--stage", "shadow", "--fence-interval", fence.String(), "--tee-lease", "1s", "--tee-invocation", "1s",
		"--poll-interval", "100ms", "--heartbeat-interval", "100ms", "--repair-interval", "250ms")
	if code, out := p.setStage(t, "handover"); code != http.StatusOK {
		t.Fatalf("PUT handover: %d %v", code, out)
	}
	eventually(t, "the flip to live", func() bool { code, _ := p.setStage(t, "live"); return code == http.StatusOK })
	flipped := time.Now()
	time.Sleep(fence + 500*time.Millisecond)

	var copies []string
	value := base64.StdEncoding.EncodeToString([]byte("forged"))
	for i := range 1000 {
		copies = append(copies, fmt.Sprintf(`{"key":"wordle:forged-%d","value":%q,"acked_at":%d}`, i, value, flipped.Add(-time.Second).UnixMilli()))
	}
	origin, _, _ := strings.Cut(p.api, "/client/v4/")
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, origin+"/kvshadow/v1/ingest",
		strings.NewReader(fmt.Sprintf(`{"namespace":%q,"copies":[%s]}`, namespace, strings.Join(copies, ","))))
	req.Header.Set("Authorization", "Bearer "+clientToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("ingest: %d %s", resp.StatusCode, body)
	}

	st := p.stats(t).Namespaces[namespace]
	var late uint64
	for _, n := range st.LateCopies {
		late += n
	}
	if st.IngestRefused["acked_after_flip"] != 1000 || late != 0 {
		t.Fatalf("refused %v, late %v; want the 1000 refused as after the flip", st.IngestRefused, st.LateCopies)
	}
	if _, err := shadowStore(t, db, nil).Get(t.Context(), "wordle:forged-7"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("a forged copy in MongoDB: %v", err)
	}
	if lines := strings.Count(p.log(), "tee copies refused or not applied"); lines != 1 {
		t.Fatalf("%d log lines for one batch of 1000 forged copies, want 1:\n%s", lines, p.log())
	}
	for _, to := range []string{"rampdown", "complete"} {
		body := `{"stage":"` + to + `","confirm_irreversible":true}`
		if to == "rampdown" {
			body = `{"stage":"rampdown"}`
		}
		if code := p.call(t, "PUT", "/stage", body, nil); code != http.StatusOK {
			t.Fatalf("PUT /stage %s after the forged batch: %d", to, code)
		}
	}
}
