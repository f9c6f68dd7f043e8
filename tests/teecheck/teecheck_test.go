package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kvshadow/kvshadow/internal/syncbuf"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The local tee check behaves like production: a Worker with the tee (the
// rehearsal's bot, wrangler dev) writes its own local KV data, which the
// bridge serves to kvshadow-proxy; the proxy verifies every copy against
// that data and compares sampled reads, and confirms nothing. (Against
// kvshadow-proxy --demo, which compares with an emulator the Worker never
// wrote, every copy is a divergence.) The copies verified are counted, so
// that a check in which no copy arrived cannot pass. In every stage it
// offers, and it prints the admin API's address and token; a handler that
// writes its binding around the tee fails it, the key named in plain.
func TestTeeCheckConfirmsNoneOfTheWorkersWrites(t *testing.T) {
	// Every stage it offers: in handover and live every call goes through
	// the proxy.
	for _, stage := range []string{"shadow", "handover", "live"} {
		t.Run(stage, func(t *testing.T) { teeCheck(t, stage) })
	}
}

func teeCheck(t *testing.T, stage string) {
	workers, _ := filepath.Abs(filepath.Join("..", "..", "workers"))
	if _, err := os.Stat(filepath.Join(workers, "node_modules", "wrangler")); err != nil {
		t.Fatal("workers/node_modules lacks wrangler: run make workers-deps")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	port := freePort()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-bot", filepath.Join(workers, "test", "realbot"), "-workers", workers, "-port", strconv.Itoa(port), "-stage", stage,
			"-var", "KVSHADOW_TEE:1", "-var", "DUAL_WRITE:0", "-var", "KVSHADOW_SAMPLE:0.5"}, pw)
		_ = pw.Close()
	}()
	var out syncbuf.Buffer // the reader below writes it while the test reads it
	lines := bufio.NewScanner(pr)
	for lines.Scan() {
		fmt.Fprintln(&out, lines.Text())
		if strings.Contains(lines.Text(), "the bot at") {
			break
		}
	}
	go func() {
		for lines.Scan() {
			fmt.Fprintln(&out, lines.Text())
		}
	}()
	bot := fmt.Sprintf("http://127.0.0.1:%d/", port)
	keys := map[string]bool{} // verification is per key: its last copy
	for seq := range 24 {
		body := fmt.Sprintf(`{"seq":%d,"user":"u%d","guess":"crane","trade":%s}`, seq, seq%6, map[bool]string{true: `"BTC"`, false: "null"}[seq%3 == 0])
		resp, err := http.Post(bot, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("the bot: %v\n%s", err, out.String())
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("the bot answered %d: %s", resp.StatusCode, b)
		}
		var answer struct {
			Written [][2]*string `json:"written"`
		}
		if err := json.Unmarshal(b, &answer); err != nil {
			t.Fatal(err)
		}
		for _, w := range answer.Written {
			keys[*w[0]] = true
		}
	}
	time.Sleep(2 * time.Second) // the tee's last copies leave 250 ms after the last write
	if stage == "shadow" {
		// A handler that writes its binding around the tee: no copy is
		// sent, and nothing reads the key.
		resp, err := http.Post(bot, "application/json", strings.NewReader(`{"around":["wordle:around","v"]}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("tee-check did not end\n%s", out.String())
	}
	time.Sleep(100 * time.Millisecond)
	got := out.String()
	if stage == "shadow" {
		// The check fails naming the key in plain, and who wrote it.
		if !errors.Is(err, ErrConfirmed) || !strings.Contains(got, "tee-check: wordle:around: missing_in_shadow: ") || !strings.Contains(got, "wrote around the tee") {
			t.Fatalf("a write around the tee: %v\n%s", err, got)
		}
		err = nil
	}
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
	if end[2] != "0" || (stage != "shadow") != strings.Contains(got, "OK: no divergence confirmed") || !strings.Contains(got, "stage="+stage) {
		t.Errorf("divergences confirmed=%s, or not in %s\n%s", end[2], stage, got)
	}
	if !regexp.MustCompile(`export ADMIN=http://127\.0\.0\.1:[0-9]+/ KVSHADOW_ADMIN_TOKEN=\S+`).MatchString(got) {
		t.Errorf("no admin address and token to try the stages with:\n%s", got)
	}
}

// A usage mistake is one (exit 2, as for every command), not a failed check.
func TestUsageMistakes(t *testing.T) {
	for _, args := range [][]string{{"-bogus"}, {"-bot", "x", "-stage", "complete"}, {"-stage", "live"}} {
		var out syncbuf.Buffer
		if err := run(t.Context(), args, &out); !errors.Is(err, errUsage) {
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
