package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/kv"
)

// startRun runs the command in the background and returns the base URL it
// prints, and a function that stops it and returns run's result.
func startRun(t *testing.T, args ...string) (base string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	out, w := io.Pipe()
	var stderr strings.Builder
	done := make(chan error, 1)
	go func() {
		err := run(ctx, args, w, &stderr)
		w.CloseWithError(err)
		done <- err
	}()
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		cancel()
		t.Fatalf("run printed nothing: %v (stderr %q)", <-done, stderr.String())
	}
	first := lines.Text()
	_, after, ok := strings.Cut(first, "at ")
	base, _, _ = strings.Cut(after, ";")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("first line %q does not give the address", first)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return base, func() error { cancel(); return <-done }
}

func TestRunServesUntilCancelled(t *testing.T) {
	base, stop := startRun(t, "-addr", "127.0.0.1:0", "-namespace", "bot-kv,other", "-account", "acc", "-token", "tok-SECRET")
	store, err := cfkv.New(cfkv.Config{AccountID: "acc", NamespaceID: "bot-kv", APIToken: "tok-SECRET", BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(t.Context(), "wordle:games:1", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatalf("Put through the emulator: %v", err)
	}
	if v, err := store.Get(t.Context(), "wordle:games:1"); err != nil || string(v) != "v" {
		t.Fatalf("Get through the emulator = %q, %v", v, err)
	}
	resp, err := http.Get(base + "accounts/acc/storage/kv/namespaces/bot-kv/keys")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("request without the token: %d, want 400", resp.StatusCode)
	}
	if err := stop(); err != nil {
		t.Fatalf("run after cancel = %v, want nil", err)
	}
	if _, err := http.Get(base + "accounts/acc/storage/kv/namespaces/bot-kv/keys"); err == nil {
		t.Fatal("still serving after run returned")
	}
}

func TestRunPrintsNoToken(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var stdout, stderr strings.Builder
	done := make(chan error, 1)
	pr, pw := io.Pipe()
	go func() {
		err := run(ctx, []string{"-addr", "127.0.0.1:0", "-token", "tok-SECRET"}, io.MultiWriter(&stdout, pw), &stderr)
		pw.Close()
		done <- err
	}()
	lines := bufio.NewScanner(pr)
	for range 2 {
		lines.Scan()
	}
	cancel()
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stdout.String()+stderr.String(), "tok-SECRET") {
		t.Fatalf("the token was printed: %s%s", stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "CLOUDFLARE_BASE_URL=http://127.0.0.1:") {
		t.Fatalf("no CLOUDFLARE_BASE_URL line: %s", stdout.String())
	}
}

func TestRunFaultFlags(t *testing.T) {
	base, stop := startRun(t, "-addr", "127.0.0.1:0", "-fail-rate", "1", "-fail-status", "502")
	defer stop()
	resp, err := http.Get(base + "accounts/any/storage/kv/namespaces/kv-emulator/keys")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("with -fail-rate 1: %d, want 502", resp.StatusCode)
	}
}

func TestRunRefuses(t *testing.T) {
	for name, args := range map[string][]string{
		"non-loopback":     {"-addr", "0.0.0.0:0"},
		"public address":   {"-addr", "8.8.8.8:80"},
		"bad address":      {"-addr", "nonsense"},
		"unknown flag":     {"-nope"},
		"extra argument":   {"serve"},
		"bad namespace":    {"-addr", "127.0.0.1:0", "-namespace", "a/b"},
		"no namespace":     {"-addr", "127.0.0.1:0", "-namespace", ","},
		"fail rate over 1": {"-addr", "127.0.0.1:0", "-fail-rate", "2"},
	} {
		var stdout, stderr strings.Builder
		err := run(t.Context(), args, &stdout, &stderr)
		if err == nil {
			t.Errorf("run(%s) = nil, want an error", name)
		}
		if name == "unknown flag" && !strings.Contains(stderr.String(), "-nope") {
			t.Errorf("unknown flag: stderr %q", stderr.String())
		}
	}
	if err := run(t.Context(), []string{"-h"}, io.Discard, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h = %v, want flag.ErrHelp", err)
	}
}
