package main

import (
	"bufio"
	"context"
	"encoding/json"
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
// that a check in which no copy arrived cannot pass.
func TestTeeCheckConfirmsNoneOfTheWorkersWrites(t *testing.T) {
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
		done <- run(ctx, []string{"-bot", filepath.Join(workers, "test", "realbot"), "-workers", workers, "-port", strconv.Itoa(port),
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
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("tee-check did not end\n%s", out.String())
	}
	time.Sleep(100 * time.Millisecond)
	got := out.String()
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
	if end[2] != "0" || !strings.Contains(got, "OK: no divergence confirmed") {
		t.Errorf("divergences confirmed=%s\n%s", end[2], got)
	}
}

func TestHelpExitsZero(t *testing.T) {
	var out syncbuf.Buffer // the reader below writes it while the test reads it
	if err := run(t.Context(), []string{"-help"}, &out); err != nil || !strings.Contains(out.String(), "usage: tee-check") {
		t.Fatalf("-help: %v\n%s", err, out.String())
	}
}
