package proxy_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// ingest posts the tee's copy of a binding write of key, acknowledged at
// acked, to the instance's ingest endpoint, as the bot's Worker does.
func (in *instance) ingest(t *testing.T, key, value string, acked time.Time) {
	t.Helper()
	origin, _, _ := strings.Cut(in.api, "/client/v4/")
	body := fmt.Sprintf(`{"namespace":%q,"copies":[{"key":%q,"value":%q,"acked_at":%d}]}`,
		namespace, key, base64.StdEncoding.EncodeToString([]byte(value)), acked.UnixMilli())
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, origin+"/kvshadow/v1/ingest", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+clientToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("ingest: %d %s", resp.StatusCode, raw)
	}
}

// Two instances over one primary and one shadow database, in handover: a
// tee copy that reached b holds the flip asked of a, through b's heartbeat
// in MongoDB, until b has verified the key it wrote; a's GET /stage says
// so, naming b.
func TestTheFenceHoldsTheFlipOnEveryInstance(t *testing.T) {
	em := newEmulator(t, nil)
	env := em.environment(srv.Database(t))
	timing := []string{"--poll-interval", "100ms", "--heartbeat-interval", "100ms", "--repair-interval", "1h", "--stage", "handover", "--new-pairing"}
	a := startInProcess(t, env, append(timing, "--instance", "a"))
	b := startInProcess(t, env, append(timing, "--instance", "b"))

	// The bot's binding wrote the key; its copy reaches b.
	if err := em.store.Put(context.Background(), "wordle:tee", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	b.ingest(t, "wordle:tee", "v", time.Now())

	held := `instance "b" (alive): 1 keys last written by a binding copy or reloaded from the journal, not verified yet`
	eventually(t, "b's heartbeat to carry its fence", func() bool {
		f := a.stage(t).Flip
		return f != nil && !f.Clear && strings.Contains(strings.Join(f.HeldBy, "; "), held)
	})
	if code, out := a.setStage(t, "live"); code != http.StatusConflict || !strings.Contains(fmt.Sprint(out["error"]), held) {
		t.Fatalf("flip on a with b's copy unverified: %d %v", code, out)
	}
	// b verifies it (a repair pass asks for verification), and the flip
	// asked of a goes.
	if code := b.call(t, "POST", "/repair", "", nil); code != http.StatusOK {
		t.Fatalf("POST /repair on b: %d", code)
	}
	eventually(t, "the flip on a", func() bool { code, _ := a.setStage(t, "live"); return code == http.StatusOK })
	eventually(t, "b runs live", b.runs(t, "live", 2))
}
