package proxy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/internal/refused"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/tests/mongotest"
)

// readyz is GET /readyz with the admin token.
func (in *instance) readyz(t *testing.T) (int, map[string]any) {
	t.Helper()
	var v map[string]any
	return in.call(t, "GET", "/readyz", "", &v), v
}

func mentions(v any, s string) bool {
	list, _ := v.([]any)
	return slices.ContainsFunc(list, func(x any) bool { str, _ := x.(string); return strings.Contains(str, s) })
}

// TestStartWithMongoDBDown: an instance restarted while MongoDB is down,
// in a stage where Workers KV is authoritative, starts from the stage its
// journal directory keeps, says in one line what is wrong, stays ready
// with the shadow reported down, serves every write through the primary,
// and once MongoDB is back follows the stage document and repairs every
// key: nothing is lost.
func TestStartWithMongoDBDown(t *testing.T) {
	bin := build(t)
	for _, stage := range []string{"dualwrite", "shadow"} {
		t.Run(stage, func(t *testing.T) { startWithShadowDown(t, bin, stage) })
	}
}

func startWithShadowDown(t *testing.T, bin, stage string) {
	em := newEmulator(t, nil)
	db := srv.Database(t)
	mongo, mongoURI := mongotest.NewRelay(t, srv)
	env := em.environment(db)
	env["MONGODB_URI"] = mongoURI
	args := []string{"--stage", stage, "--journal-dir", t.TempDir(), "--repair-interval", "200ms", "--breaker-open-timeout", "300ms",
		"--probe-interval", "200ms", "--poll-interval", "200ms", "--heartbeat-interval", "200ms"}
	first := startProcess(t, bin, env, args...)
	if err := first.stop(); err != nil {
		t.Fatalf("the first run: %v\n%s", err, first.log())
	}

	mongo.Down()
	p := startProcess(t, bin, env, args...)
	unreachable := "MongoDB at " + mongo.Addr() + ": unreachable (connection refused: nothing listens there)"
	if log := p.log(); !strings.Contains(log, unreachable) || strings.Contains(log, "current topology") || !strings.Contains(log, "serving in "+stage) {
		t.Errorf("the start does not say in one line that MongoDB is unreachable and which stage it serves:\n%s", log)
	}
	oneWarning(t, p.log(), unreachable+": the control board (the stage document) cannot be read: serving in "+stage, "Workers KV is authoritative",
		"once MongoDB answers, the instance joins the control board")
	if code, v := p.readyz(t); code != http.StatusOK || !mentions(v["degraded"], unreachable) {
		t.Errorf("readyz with MongoDB down: %d %v, want 200 naming MongoDB as degraded", code, v)
	}
	client := p.client(t, nil)
	ctx := context.Background()
	want := map[string]string{}
	for i := range 30 {
		key, value := fmt.Sprintf("wordle:down:%02d", i), fmt.Sprintf("v%d", i)
		if err := client.Put(ctx, key, []byte(value), kv.PutOptions{}); err != nil {
			t.Fatalf("a write with MongoDB down: %v", err)
		}
		want[key] = value
	}
	if err := client.Delete(ctx, "wordle:down:00"); err != nil {
		t.Fatal(err)
	}
	delete(want, "wordle:down:00")
	eventually(t, "the copies' keys dirty", func() bool { return p.stats(t).Total.Dirty > 0 })
	time.Sleep(time.Second) // polls, heartbeats and readiness probes that fail
	oneWarning(t, p.log(), unreachable)

	mongo.Up(t)
	eventually(t, "the stage document followed and every key repaired", func() bool {
		s := p.stage(t)
		st := p.stats(t)
		return s.Self.InSync && s.Self.Generation > 0 && s.Self.Stage == stage && st.Total.Dirty == 0 && st.Total.Unsettled == 0
	})
	if code, v := p.readyz(t); code != http.StatusOK || v["degraded"] != nil {
		t.Errorf("readyz with MongoDB back: %d %v", code, v)
	}
	if joined := logLines(p.log(), "msg=\"control:"); len(joined) != 1 || !strings.Contains(joined[0], "level=INFO") || !strings.Contains(joined[0], "control board answers") {
		t.Errorf("the follower logged %d lines, want one info line for the join:\n%s", len(joined), p.log())
	}
	shadow := shadowStore(t, db, nil)
	for key, value := range want {
		got, err := shadow.Get(ctx, key)
		if err != nil || string(got) != value {
			t.Errorf("MongoDB's %s: %q %v, want %q", key, got, err, value)
		}
		if got, err := em.store.Get(ctx, key); err != nil || string(got) != value {
			t.Errorf("Workers KV's %s: %q %v, want %q", key, got, err, value)
		}
	}
	if _, err := shadow.Get(ctx, "wordle:down:00"); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("the key deleted while MongoDB was down: %v, want not found", err)
	}
}

// TestADetachedStartSeedsAnEmptyBoardWithItsStage: an instance whose
// journal directory says it ran shadow, started with --stage dualwrite
// while MongoDB is down, serves shadow; when MongoDB answers with no stage
// document yet, it writes shadow (what its writes have been doing) as
// generation 1 and stays there, where it wrote --stage and stepped back.
func TestADetachedStartSeedsAnEmptyBoardWithItsStage(t *testing.T) {
	bin := build(t)
	em := newEmulator(t, nil)
	db := srv.Database(t)
	mongo, mongoURI := mongotest.NewRelay(t, srv)
	mongo.Down()
	env := em.environment(db)
	env["MONGODB_URI"] = mongoURI
	dir := t.TempDir()
	if err := control.KeepStage(dir, dualwrite.Shadow); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, bin, env, "--stage", "dualwrite", "--journal-dir", dir, "--poll-interval", "200ms", "--heartbeat-interval", "200ms")
	if st := p.stats(t); st.Total.Stage != "shadow" || st.Generation != 0 {
		t.Fatalf("with MongoDB down: stage %s, generation %d; want shadow, the stage file's, at no generation", st.Total.Stage, st.Generation)
	}
	mongo.Up(t)
	eventually(t, "the stage document read", func() bool { s := p.stage(t); return s.Self.InSync && s.Self.Generation > 0 })
	if s := p.stage(t); s.Self.Stage != "shadow" || s.Self.Generation != 1 {
		t.Errorf("after the join: %+v; want shadow at generation 1", s.Self)
	}
	mc, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	if doc, err := control.NewMongoBoard(mc.Database(db)).Load(t.Context()); err != nil || doc.Stage != dualwrite.Shadow || doc.Generation != 1 {
		t.Errorf("the stage document: %+v, %v; want shadow at generation 1", doc, err)
	}
	if changed := logLines(p.log(), "stage changed"); len(changed) != 0 {
		t.Errorf("the instance changed stage at the join:\n%s", strings.Join(changed, "\n"))
	}
}

// oneWarning checks that log holds one warning, saying each of says; the
// dual-write store's breaker changes are its own state (its metric and
// alerts follow them), not a word on the outage.
func oneWarning(t *testing.T, log string, says ...string) {
	t.Helper()
	warnings := logLines(log, "level=WARN", "dualwrite: circuit breaker")
	if len(warnings) != 1 {
		t.Errorf("%d warnings with MongoDB down, want one for the outage:\n%s", len(warnings), log)
		return
	}
	for _, s := range says {
		if !strings.Contains(warnings[0], s) {
			t.Errorf("the warning does not say %q:\n%s", s, warnings[0])
		}
	}
}

// logLines returns the lines of log that hold has and none of not.
func logLines(log, has string, not ...string) []string {
	var got []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, has) && !slices.ContainsFunc(not, func(n string) bool { return strings.Contains(l, n) }) {
			got = append(got, l)
		}
	}
	return got
}

// TestStartInLiveWithMongoDBDown: in live MongoDB is authoritative, and
// its authority comes from the stage document alone: an instance that
// starts without it serves nothing (503, saying why) and is not ready,
// then follows the document and serves once MongoDB is back.
func TestStartInLiveWithMongoDBDown(t *testing.T) {
	bin := build(t)
	em := newEmulator(t, nil)
	db := srv.Database(t)
	mongo, mongoURI := mongotest.NewRelay(t, srv)
	env := em.environment(db)
	env["MONGODB_URI"] = mongoURI
	args := []string{"--stage", "shadow", "--journal-dir", t.TempDir(), "--probe-interval", "200ms", "--poll-interval", "200ms"}
	first := startProcess(t, bin, env, args...)
	for _, next := range []string{"handover", "live"} {
		if code, out := first.setStage(t, next); code != http.StatusOK {
			t.Fatalf("PUT %s: %d %v", next, code, out)
		}
	}
	if err := first.stop(); err != nil {
		t.Fatalf("the first run: %v\n%s", err, first.log())
	}

	mongo.Down()
	p := startProcess(t, bin, env, args...)
	if log := p.log(); !strings.Contains(log, "the last stage this instance ran is live, in which MongoDB is authoritative: serving nothing (503)") {
		t.Errorf("the start does not say why it serves nothing:\n%s", log)
	}
	if !strings.Contains(p.serving, "no stage until the stage document can be read") || strings.Contains(p.serving, "stage live") {
		t.Errorf("the banner names a stage it does not serve: %s", p.serving)
	}
	client := p.client(t, nil)
	err := client.Put(context.Background(), "wordle:live", []byte("v"), kv.PutOptions{})
	if !errors.Is(err, kv.ErrUnavailable) || !strings.Contains(err.Error(), "does not know the migration stage") {
		t.Errorf("a write in live without the stage document: %v, want 503 saying the stage is unknown", err)
	}
	if code, v := p.readyz(t); code != http.StatusServiceUnavailable || !mentions(v["reasons"], "stage: unknown") {
		t.Errorf("readyz without the stage document: %d %v", code, v)
	}

	mongo.Up(t)
	eventually(t, "live followed", func() bool { s := p.stage(t); return s.Self.InSync && s.Self.Generation > 0 && s.Self.Stage == "live" })
	if err := client.Put(context.Background(), "wordle:live", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatalf("a write in live with MongoDB back: %v", err)
	}
	if got, err := shadowStore(t, db, nil).Get(context.Background(), "wordle:live"); err != nil || string(got) != "v" {
		t.Errorf("MongoDB's wordle:live: %q %v", got, err)
	}
}

// TestWrongSettingsAtStart starts the command with each wrong setting and
// reads what it says: one line naming the store, Cloudflare's code and
// what to check; exit 2 where the environment is wrong and a restart
// cannot mend it, and a start (with readyz naming the store) where the
// store is only out of reach.
func TestWrongSettingsAtStart(t *testing.T) {
	bin := build(t)
	em := newEmulator(t, nil)
	db := srv.Database(t)
	host := strings.TrimPrefix(strings.TrimSuffix(em.url, "/client/v4/"), "http://")
	// Credentials the server refuses (FerretDB refuses SCRAM-SHA-1 as
	// AuthenticationFailed, as MongoDB refuses a wrong password).
	badCreds, err := url.Parse(srv.URI())
	if err != nil {
		t.Fatal(err)
	}
	badCreds.User, badCreds.RawQuery = url.UserPassword("kvshadow", "pw-SECRET-1"), "authSource=admin&authMechanism=SCRAM-SHA-1"
	for _, c := range []struct {
		name, key, value, line string
	}{
		{"a mongo:// URI", "MONGODB_URI", "mongo://127.0.0.1:27017",
			"kvshadow-proxy: usage: MONGODB_URI (or --mongo-uri-file) is not a MongoDB connection string: it must start with mongodb:// or mongodb+srv://"},
		{"MongoDB refusing the credentials", "MONGODB_URI", badCreds.String(),
			"kvshadow-proxy: MongoDB at " + badCreds.Host + ": authentication failed (check the user and password in MONGODB_URI)"},
		{"a token the primary refuses", "CLOUDFLARE_API_TOKEN", "wrong-token",
			"kvshadow-proxy: Workers KV (account " + account + ", namespace " + namespace + " at " + host + "): refused, HTTP 403, code 10000: Authentication error (check CLOUDFLARE_API_TOKEN: it needs Workers KV Storage read, and edit to write or repair)"},
		{"a namespace that does not exist", "CLOUDFLARE_KV_NAMESPACE_ID", "00000000000000000000000000000000",
			"kvshadow-proxy: Workers KV (account " + account + ", namespace 00000000000000000000000000000000 at " + host + "): refused, HTTP 404, code 10013"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := em.environment(db)
			env[c.key] = c.value
			stderr, code := runToExit(t, bin, env)
			if code != 2 {
				t.Errorf("exit %d, want 2\n%s", code, stderr)
			}
			if !strings.Contains(stderr, c.line) || strings.Contains(stderr, `\u003c`) || strings.Contains(stderr, "current topology") || strings.Contains(stderr, "SECRET") {
				t.Errorf("stderr lacks the line %q:\n%s", c.line, stderr)
			}
		})
	}

	t.Run("the primary unreachable", func(t *testing.T) {
		closed, release, err := refused.Addr() // held: nothing else serves there meanwhile
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		env := em.environment(db)
		env["CLOUDFLARE_BASE_URL"] = "http://" + closed + "/client/v4/"
		p := startProcess(t, bin, env, "--stage", "dualwrite", "--probe-interval", "200ms")
		line := "Workers KV (account " + account + ", namespace " + namespace + " at " + closed + "): unreachable (connection refused: nothing listens there)"
		if !strings.Contains(p.log(), line) {
			t.Errorf("the start does not say %q:\n%s", line, p.log())
		}
		if code, v := p.readyz(t); code != http.StatusServiceUnavailable || !mentions(v["reasons"], "the authoritative store (primary) of namespace "+namespace+" does not answer: "+line) {
			t.Errorf("readyz: %d %v", code, v)
		}
	})
}

// runToExit runs the command until it exits and returns its stderr and
// exit code; one that still serves after a minute has started, which is
// the failure.
func runToExit(t *testing.T, bin string, env map[string]string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the command started and served for a minute instead of refusing the setting:\n%s", stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the command did not fail: %v\n%s", err, stderr.String())
	}
	return stderr.String(), exit.ExitCode()
}
