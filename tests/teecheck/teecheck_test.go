package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/internal/syncbuf"
	"github.com/kvshadow/kvshadow/tests/command"
)

// The local tee check behaves like production: a Worker with the tee (the
// rehearsal's bot, wrangler dev) writes its own local KV data, which the
// bridge serves to kvshadow-proxy; the proxy verifies every copy against
// that data and compares sampled reads, and confirms nothing. (Against
// kvshadow-proxy --demo, which compares with an emulator the Worker never
// wrote, every copy is a divergence.) The copies verified are counted, so
// that a check in which no copy arrived cannot pass. In every stage it
// offers, and it prints the admin API's address and token.
func TestTeeCheckConfirmsNoneOfTheWorkersWrites(t *testing.T) {
	// Every stage it offers: in handover and live every call goes through
	// the proxy. The fence, which the flip to live waits for, shortened.
	for _, stage := range []string{"shadow", "handover", "live"} {
		t.Run(stage, func(t *testing.T) { teeCheck(t, stage) })
	}
}

func teeCheck(t *testing.T, stage string) {
	c := startCheck(t, "realbot", "-stage", stage, "-fence", "4s", "-var", "KVSHADOW_TEE:1", "-var", "DUAL_WRITE:0", "-var", "KVSHADOW_SAMPLE:0.5")
	keys := map[string]bool{} // verification is per key: its last copy
	for seq := range 24 {
		body := fmt.Sprintf(`{"seq":%d,"user":"u%d","guess":"crane","trade":%s}`, seq, seq%6, map[bool]string{true: `"BTC"`, false: "null"}[seq%3 == 0])
		var answer struct {
			Written [][2]*string `json:"written"`
		}
		if err := json.Unmarshal([]byte(c.call(http.MethodPost, "", body)), &answer); err != nil {
			t.Fatal(err)
		}
		for _, w := range answer.Written {
			keys[*w[0]] = true
		}
	}
	// Ended right after the last answer: the check waits for the
	// invocations' copies itself.
	got, err := c.end()
	if err != nil {
		t.Fatalf("tee-check: %v\n%s", err, got)
	}
	end := regexp.MustCompile(`at the end: .*copies verified=([0-9]+) .*divergences confirmed=([0-9]+)`).FindStringSubmatch(got)
	if end == nil {
		t.Fatalf("no final counts:\n%s", got)
	}
	if verified, _ := strconv.Atoi(end[1]); verified < len(keys) {
		t.Errorf("%s keys' copies verified of %d keys written: the tee's copies did not reach the proxy\n%s", end[1], len(keys), got)
	}
	if end[2] != "0" || !strings.Contains(got, "OK: no divergence confirmed") || !strings.Contains(got, "stage="+stage) {
		t.Errorf("divergences confirmed=%s, or not in %s\n%s", end[2], stage, got)
	}
	if !regexp.MustCompile(`export ADMIN=http://127\.0\.0\.1:[0-9]+/ KVSHADOW_ADMIN_TOKEN=\S+`).MatchString(got) {
		t.Errorf("no admin address and token to try the stages with:\n%s", got)
	}
}

// A Worker whose handlers all write through the tee but one
// (workers/test/aroundbot: POST /reset writes env.KV itself): the check
// fails naming that handler, its request and the key, and what to change,
// and no other handler; the key that differs is put down to it too.
func TestTeeCheckNamesTheHandlerThatWroteAroundTheTee(t *testing.T) {
	c := startCheck(t, "aroundbot")
	c.call(http.MethodPost, "alice", "5")
	c.call(http.MethodPost, "bob", "7")
	c.call(http.MethodDelete, "bob", "")
	c.call(http.MethodGet, "cdn-cgi/handler/scheduled?cron=*/5+*+*+*+*", "")
	c.call(http.MethodPost, "reset", "")
	got, err := c.end()
	if !errors.Is(err, ErrAroundTee) {
		t.Fatalf("a handler that writes around the tee: %v, want ErrAroundTee\n%s", err, got)
	}
	for _, want := range []string{
		"tee-check: fetch POST /reset writes env.KV directly, around the tee (no copy of its writes reached kvshadow-proxy): score:all; wrap env.KV with the tee in this handler as workers/README.md shows",
		"tee-check: score:all: missing_in_shadow: ",
		"; written around the tee by fetch POST /reset\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks %q\n%s", want, got)
		}
	}
	if !strings.Contains(err.Error(), "fetch POST /reset (score:all)") {
		t.Errorf("the verdict names no handler: %v", err)
	}
	if n := strings.Count(got, "around the tee"); n != 2 || strings.Contains(got, "scheduled (") || strings.Contains(got, "/alice") {
		t.Errorf("%d lines of writes around the tee, or a handler named that used the tee\n%s", n, got)
	}
	if v := regexp.MustCompile(`at the end: .*copies verified=([0-9]+) `).FindStringSubmatch(got); v == nil || atoi(v[1]) < 3 {
		t.Errorf("want 3 keys' copies verified at least (score:alice, score:bob, round by the cron)\n%s", got)
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// A Worker whose default export is a WorkerEntrypoint class runs under
// tee-check as it is: its handlers are not watched, which the check says,
// and its write around the tee is found as a key that differs, blamed on
// no one in particular.
func TestTeeCheckRunsAClassWorkerUnwatched(t *testing.T) {
	c := startCheck(t, "aroundbot", "-config", "class.toml")
	c.call(http.MethodPost, "", "")
	got, err := c.end()
	if !errors.Is(err, ErrConfirmed) || !strings.Contains(err.Error(), "a handler wrote the binding around the tee, or the tee, the bridge or the proxy") {
		t.Fatalf("a class Worker's write around the tee: %v, want ErrConfirmed\n%s", err, got)
	}
	if !strings.Contains(got, "tee-check: the Worker's handlers were not watched") || !strings.Contains(got, "tee-check: score:class: missing_in_shadow: ") {
		t.Errorf("no word of the unwatched handlers, or of score:class\n%s", got)
	}
}

// A -port that another server holds is no bot: wrangler cannot bind it,
// and tee-check says so instead of taking whatever answers there for the
// bot (a wait for any HTTP answer did, and the check then drove the other
// server).
func TestTeeCheckTakesNoOtherServerForTheBot(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "not the bot") }))
	defer other.Close()
	workers, _ := filepath.Abs(filepath.Join("..", "..", "workers"))
	var out syncbuf.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // were the other server taken for the bot, the check would run until Ctrl-C
	defer cancel()
	err := run(ctx, []string{"-bot", filepath.Join(workers, "test", "aroundbot"), "-workers", workers, "-port", strings.TrimPrefix(other.URL, "http://127.0.0.1:")}, &out)
	if err == nil || !strings.Contains(err.Error(), "the bot's wrangler dev: wrangler ended") || strings.Contains(out.String(), "the bot at") {
		t.Fatalf("tee-check with the bot's port held by another server: %v, want wrangler's failure\n%s", err, out.String())
	}
}

// check is one run of tee-check, driven as a user does.
type check struct {
	t    *testing.T
	bot  string
	out  *syncbuf.Buffer
	stop context.CancelFunc
	done chan error
	read chan struct{}
}

// startCheck runs tee-check on workers/test/<bot> with args, the bot on
// any free port (wrangler's own), and waits until it says where the bot is.
func startCheck(t *testing.T, bot string, args ...string) *check {
	workers, _ := filepath.Abs(filepath.Join("..", "..", "workers"))
	if _, err := os.Stat(filepath.Join(workers, "node_modules", "wrangler")); err != nil {
		t.Fatal("workers/node_modules lacks wrangler: run make workers-deps")
	}
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	pr, pw := io.Pipe()
	c := &check{t: t, out: &syncbuf.Buffer{}, stop: cancel, done: make(chan error, 1), read: make(chan struct{})}
	go func() {
		c.done <- run(ctx, append([]string{"-bot", filepath.Join(workers, "test", bot), "-workers", workers, "-port", "0"}, args...), pw)
		_ = pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	for c.bot == "" && lines.Scan() {
		fmt.Fprintln(c.out, lines.Text())
		if m := regexp.MustCompile(`the bot at (http://\S+/) `).FindStringSubmatch(lines.Text()); m != nil {
			c.bot = m[1]
		}
	}
	if c.bot == "" {
		t.Fatalf("tee-check did not say where the bot is: %v\n%s", <-c.done, c.out.String())
	}
	go func() {
		defer close(c.read)
		for lines.Scan() {
			fmt.Fprintln(c.out, lines.Text())
		}
	}()
	return c
}

// call sends one request to the bot and returns its answer, which must be 200.
func (c *check) call(method, path, body string) string {
	req, _ := http.NewRequest(method, c.bot+path, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("the bot: %v\n%s", err, c.out.String())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("the bot answered %s %s with %d: %s", method, path, resp.StatusCode, b)
	}
	return string(b)
}

// end is Ctrl-C: the verdict, and all that tee-check printed.
func (c *check) end() (string, error) {
	c.stop()
	select {
	case err := <-c.done:
		<-c.read
		return c.out.String(), err
	case <-time.After(2 * time.Minute):
		c.t.Fatalf("tee-check did not end\n%s", c.out.String())
		return "", nil
	}
}

// A usage mistake is one (exit 2, as for every command), not a failed check.
func TestUsageMistakes(t *testing.T) {
	for _, args := range [][]string{{"-bogus"}, {"-bot", "x", "-stage", "complete"}, {"-stage", "live"}} {
		var out syncbuf.Buffer
		if err := run(t.Context(), args, &out); !errors.Is(err, command.ErrUsage) {
			t.Errorf("tee-check %v: %v, want a usage error", args, err)
		}
	}
}

func TestHelpExitsZero(t *testing.T) {
	var out syncbuf.Buffer // the reader below writes it while the test reads it
	if err := run(t.Context(), []string{"-help"}, &out); err != nil || !strings.Contains(out.String(), "usage: tee-check") {
		t.Fatalf("-help: %v\n%s", err, out.String())
	}
}
