package proxy_test

import (
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/service/admin"
	"github.com/kvshadow/kvshadow/tests/mongotest"
)

func (in *instance) stage(t *testing.T) admin.StageView {
	t.Helper()
	s, err := in.adminClient().Stage(t.Context())
	if err != nil {
		t.Fatalf("GET /stage: %v", err)
	}
	return s
}

func (in *instance) runs(t *testing.T, stage string, generation uint64) func() bool {
	return func() bool {
		s := in.stage(t)
		return s.Self.Stage == stage && s.Self.Generation == generation && s.Self.InSync && in.stats(t).Generation == generation
	}
}

// TestInstancesFollowOneStageDocument runs two processes over one primary
// and one shadow database: a change made through either reaches the other
// within its poll interval, and a flip of the authoritative store is
// refused while one of them is dirty, live or stopped, until its keys are
// dealt with.
func TestInstancesFollowOneStageDocument(t *testing.T) {
	bin := build(t)
	em := newEmulator(t, nil)
	db := srv.Database(t)
	env := em.environment(db)
	timing := []string{"--poll-interval", "100ms", "--heartbeat-interval", "200ms"}
	a := startProcess(t, bin, env, append(timing, "--instance", "a", "--stage", "dualwrite")...)
	// b's copies all time out, so every key it writes stays dirty.
	dirtyDir := t.TempDir()
	b := startProcess(t, bin, env, append(timing, "--instance", "b", "--stage", "off", "--shadow-timeout", "1us", "--dirty-dir", dirtyDir)...)

	// b found the document a wrote, and follows it rather than its --stage.
	if s := b.stage(t); s.Self.Stage != "dualwrite" || s.Self.Generation != 1 {
		t.Fatalf("b started in %s, generation %d", s.Self.Stage, s.Self.Generation)
	}
	if code, out := a.setStage(t, "shadow"); code != http.StatusOK {
		t.Fatalf("PUT shadow on a: %d %v", code, out)
	}
	eventually(t, "b runs shadow", b.runs(t, "shadow", 2))
	// Back again, through b this time.
	if code, out := b.setStage(t, "dualwrite"); code != http.StatusOK {
		t.Fatalf("PUT dualwrite on b: %d %v", code, out)
	}
	eventually(t, "a runs dualwrite", a.runs(t, "dualwrite", 3))
	if code, _ := a.setStage(t, "shadow"); code != http.StatusOK {
		t.Fatal("PUT shadow again")
	}
	eventually(t, "b runs shadow again", b.runs(t, "shadow", 4))

	// A write through b leaves a dirty key there; a flip waits for it.
	if err := b.client(t, nil).Put(t.Context(), "wordle:through-b", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b's heartbeat says it is dirty", func() bool {
		for _, h := range a.stage(t).Instances {
			if h.Instance == "b" && h.Dirty > 0 {
				return true
			}
		}
		return false
	})
	if code, out := a.setStage(t, "handover"); code != http.StatusOK {
		t.Fatalf("PUT handover on a: %d %v", code, out)
	}
	eventually(t, "b runs handover", b.runs(t, "handover", 5))
	code, out := a.setStage(t, "live")
	if msg, _ := out["error"].(string); code != http.StatusConflict || !strings.Contains(msg, `instance "b" (alive)`) || !strings.Contains(msg, "dirty") {
		t.Fatalf("flip with b dirty: %d %v", code, out)
	}

	// Stopped, b keeps its dirty keys and its heartbeat says so.
	if err := b.stop(); err != nil {
		t.Fatalf("b after SIGTERM: %v\n%s", err, b.log())
	}
	kept, err := os.ReadFile(filepath.Join(dirtyDir, namespace+".keys"))
	if err != nil || !strings.Contains(string(kept), "wordle:through-b") {
		t.Fatalf("b's dirty keys: %q, %v", kept, err)
	}
	code, out = a.setStage(t, "live")
	if msg, _ := out["error"].(string); code != http.StatusConflict || !strings.Contains(msg, `instance "b" (stopped`) {
		t.Fatalf("flip with b stopped dirty: %d %v", code, out)
	}
	// Once its keys are repaired elsewhere, b is forgotten and the flip goes.
	if code := a.call(t, "DELETE", "/instances/b", "", nil); code != http.StatusNoContent {
		t.Fatalf("DELETE /instances/b: %d", code)
	}
	if code, out := a.setStage(t, "live"); code != http.StatusOK || out["stage"] != "live" {
		t.Fatalf("flip after forgetting b: %d %v", code, out)
	}
	if err := a.stop(); err != nil {
		t.Fatalf("a after SIGTERM: %v\n%s", err, a.log())
	}
	if strings.Contains(a.log()+b.log(), adminToken) || strings.Contains(a.log()+b.log(), primaryToken) {
		t.Fatal("a token reached the log")
	}
}

// TestACutOffInstanceHoldsTheFlip: of two processes in handover, one is
// cut off from MongoDB (and so from the control board, which lives there)
// and keeps serving its last stage, Workers KV authoritative, as an
// instance without the board does: a write through it reaches Workers KV
// alone, and no heartbeat reports it. The flip to live through the other
// is refused while the cut-off one is silent (a flip then would serve
// MongoDB without that acknowledged write), and goes once it is back and
// has repaired its key into MongoDB.
func TestACutOffInstanceHoldsTheFlip(t *testing.T) {
	bin := build(t)
	em := newEmulator(t, nil)
	db := srv.Database(t)
	env := em.environment(db)
	relay, uri := mongotest.NewRelay(t, srv)
	cutEnv := maps.Clone(env)
	cutEnv["MONGODB_URI"] = uri
	timing := []string{"--poll-interval", "100ms", "--heartbeat-interval", "200ms", "--repair-interval", "250ms", "--stage", "shadow"}
	a := startProcess(t, bin, cutEnv, append(timing, "--instance", "a")...)
	b := startProcess(t, bin, env, append(timing, "--instance", "b")...)
	if code, out := b.setStage(t, "handover"); code != http.StatusOK {
		t.Fatalf("PUT handover on b: %d %v", code, out)
	}
	eventually(t, "a runs handover", a.runs(t, "handover", 2))

	relay.Cut(true)
	const key = "wordle:written-while-cut-off"
	if err := a.client(t, nil).Put(t.Context(), key, []byte("acknowledged by a"), kv.PutOptions{}); err != nil {
		t.Fatalf("a write through the cut-off instance: %v", err)
	}
	eventually(t, "b sees a silent", func() bool {
		for _, h := range b.stage(t).Instances {
			if h.Instance == "a" && !h.Alive {
				return true
			}
		}
		return false
	})
	code, out := b.setStage(t, "live")
	if msg, _ := out["error"].(string); code != http.StatusConflict || !strings.Contains(msg, `instance "a" (silent for`) || !strings.Contains(msg, "without leaving") {
		t.Fatalf("the flip with a cut off: %d %v", code, out)
	}

	relay.Cut(false)
	eventually(t, "the flip, once a is back and has repaired its key", func() bool {
		code, _ := b.setStage(t, "live")
		return code == http.StatusOK
	})
	got, err := b.client(t, nil).Get(t.Context(), key)
	if err != nil || string(got) != "acknowledged by a" {
		t.Fatalf("in live, b reads %q, %v: want the write a acknowledged while cut off", got, err)
	}
	for _, p := range []*process{a, b} {
		if err := p.stop(); err != nil {
			t.Fatalf("after SIGTERM: %v\n%s", err, p.log())
		}
	}
}
