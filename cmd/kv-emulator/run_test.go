package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/kv"
)

// env is a fake environment.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// started is a running command: its base URL, what it printed, and a
// function that stops it and returns run's result.
type started struct {
	base  string
	lines []string
	stop  func() error
}

// startRun runs the command in the background until it has printed its
// two or three lines.
func startRun(t *testing.T, getenv func(string) string, args ...string) started {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	out, w := io.Pipe()
	var stderr strings.Builder
	done := make(chan error, 1)
	go func() {
		err := run(ctx, args, getenv, w, &stderr)
		w.CloseWithError(err)
		done <- err
	}()
	lines := bufio.NewScanner(out)
	var s started
	for len(s.lines) < 2 && lines.Scan() {
		s.lines = append(s.lines, lines.Text())
	}
	if len(s.lines) < 2 {
		cancel()
		t.Fatalf("run printed %q: %v (stderr %q)", s.lines, <-done, stderr.String())
	}
	_, after, ok := strings.Cut(s.lines[0], "at ")
	s.base, _, _ = strings.Cut(after, ";")
	if !ok || !strings.HasPrefix(s.base, "http://127.0.0.1:") {
		t.Fatalf("first line %q does not give the address", s.lines[0])
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	s.stop = sync.OnceValue(func() error { cancel(); return <-done })
	t.Cleanup(func() { _ = s.stop() })
	return s
}

// exported parses the printed export line.
func (s started) exported(t *testing.T) map[string]string {
	t.Helper()
	rest, ok := strings.CutPrefix(s.lines[1], "export ")
	if !ok {
		t.Fatalf("second line %q is not an export", s.lines[1])
	}
	vars := map[string]string{}
	for _, f := range strings.Fields(rest) {
		k, v, _ := strings.Cut(f, "=")
		vars[k] = v
	}
	return vars
}

func TestRunServesUntilCancelled(t *testing.T) {
	s := startRun(t, env(EnvToken, "tok-SECRET"), "-addr", "127.0.0.1:0", "-namespace", "bot-kv,other", "-account", "acc")
	store, err := cfkv.New(cfkv.Config{AccountID: "acc", NamespaceID: "bot-kv", APIToken: "tok-SECRET", BaseURL: s.base})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(t.Context(), "wordle:games:1", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatalf("Put through the emulator: %v", err)
	}
	if v, err := store.Get(t.Context(), "wordle:games:1"); err != nil || string(v) != "v" {
		t.Fatalf("Get through the emulator = %q, %v", v, err)
	}
	resp, err := http.Get(s.base + "accounts/acc/storage/kv/namespaces/bot-kv/keys")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("request without the token: %d, want 400", resp.StatusCode)
	}
	if err := s.stop(); err != nil {
		t.Fatalf("run after cancel = %v, want nil", err)
	}
	if _, err := http.Get(s.base + "accounts/acc/storage/kv/namespaces/bot-kv/keys"); err == nil {
		t.Fatal("still serving after run returned")
	}
}

// TestRunPrintsNoToken: the token is never printed; the line names both
// base URL variables, wrangler's without the trailing slash.
func TestRunPrintsNoToken(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("tok-FILE\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startRun(t, env(), "-addr", "127.0.0.1:0", "-token-file", file)
	vars := s.exported(t)
	if strings.Contains(strings.Join(s.lines, "\n"), "tok-FILE") || vars[cfkv.EnvAPIToken] != "" {
		t.Fatalf("the token was printed: %q", s.lines)
	}
	if vars[cfkv.EnvBaseURL] != s.base || vars["CLOUDFLARE_API_BASE_URL"] != strings.TrimSuffix(s.base, "/") {
		t.Fatalf("export line %q, base %s", s.lines[1], s.base)
	}
	store, err := cfkv.New(cfkv.Config{AccountID: vars[cfkv.EnvAccountID], NamespaceID: vars[cfkv.EnvNamespaceID], APIToken: "tok-FILE", BaseURL: s.base})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(t.Context(), "k", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatalf("Put with the token from the file: %v", err)
	}
}

// TestRunUnauthenticatedLineWorks: without a token, the printed line is
// all a Workers KV client configured from the environment needs, as
// shadow-report is; and wrangler's base URL reaches the account calls.
func TestRunUnauthenticatedLineWorks(t *testing.T) {
	s := startRun(t, env(), "-addr", "127.0.0.1:0", "-unauthenticated")
	vars := s.exported(t)
	store, err := cfkv.New(cfkv.ConfigFromEnv(func(k string) string { return vars[k] }))
	if err != nil {
		t.Fatalf("a client from the printed line: %v", err)
	}
	if err := store.Put(t.Context(), "k", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/memberships", "/accounts/" + vars[cfkv.EnvAccountID] + "/storage/kv/namespaces"} {
		resp, err := http.Get(vars["CLOUDFLARE_API_BASE_URL"] + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"success":true`) {
			t.Fatalf("GET %s = %d %s", path, resp.StatusCode, body)
		}
	}
}

func TestRunFaultFlags(t *testing.T) {
	s := startRun(t, env(), "-addr", "127.0.0.1:0", "-unauthenticated", "-fail-rate", "1", "-fail-status", "502")
	resp, err := http.Get(s.base + "accounts/any/storage/kv/namespaces/kv-emulator/keys")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("with -fail-rate 1: %d, want 502", resp.StatusCode)
	}
}

// TestRunExitCodes: -help exits 0 with the help on stdout; every mistake
// on the command line exits 2; a failure to serve exits 1.
func TestRunExitCodes(t *testing.T) {
	for _, help := range []string{"-h", "-help", "--help"} {
		var stdout, stderr strings.Builder
		err := run(t.Context(), []string{help}, env(), &stdout, &stderr)
		if exitCode(err) != 0 || !strings.Contains(stdout.String(), "KV_EMULATOR_TOKEN") || !strings.Contains(stdout.String(), "-fail-status") {
			t.Fatalf("%s = %v (exit %d), stdout %q", help, err, exitCode(err), stdout.String())
		}
	}
	tok := env(EnvToken, "t")
	for name, c := range map[string]struct {
		args   []string
		getenv func(string) string
	}{
		"non-loopback":          {[]string{"-addr", "0.0.0.0:0"}, tok},
		"public address":        {[]string{"-addr", "8.8.8.8:80"}, tok},
		"bad address":           {[]string{"-addr", "nonsense"}, tok},
		"unknown flag":          {[]string{"-nope"}, tok},
		"token flag":            {[]string{"-token", "t"}, env()},
		"extra argument":        {[]string{"serve"}, tok},
		"bad namespace":         {[]string{"-addr", "127.0.0.1:0", "-namespace", "a/b"}, tok},
		"no namespace":          {[]string{"-addr", "127.0.0.1:0", "-namespace", ","}, tok},
		"fail rate over 1":      {[]string{"-addr", "127.0.0.1:0", "-fail-rate", "2"}, tok},
		"fail status 200":       {[]string{"-addr", "127.0.0.1:0", "-fail-status", "200"}, tok},
		"fail status 404":       {[]string{"-addr", "127.0.0.1:0", "-fail-status", "404"}, tok},
		"fail status 600":       {[]string{"-addr", "127.0.0.1:0", "-fail-status", "600"}, tok},
		"no token":              {[]string{"-addr", "127.0.0.1:0"}, env()},
		"token and open":        {[]string{"-addr", "127.0.0.1:0", "-unauthenticated"}, tok},
		"token with whitespace": {[]string{"-addr", "127.0.0.1:0"}, env(EnvToken, "a b")},
		"token with #":          {[]string{"-addr", "127.0.0.1:0"}, env(EnvToken, "a#b")},
		"non-ASCII token":       {[]string{"-addr", "127.0.0.1:0"}, env(EnvToken, "tökén")},
	} {
		err := run(t.Context(), c.args, c.getenv, io.Discard, io.Discard)
		if exitCode(err) != exitUsage {
			t.Errorf("%s: %v, exit %d; want 2", name, err, exitCode(err))
		}
	}
	if err := run(t.Context(), []string{"-token", "t"}, env(), io.Discard, io.Discard); !strings.Contains(fmt.Sprint(err), EnvToken) {
		t.Errorf("-token: %v, want a pointer to %s", err, EnvToken)
	}
	missing := filepath.Join(t.TempDir(), "none")
	if err := run(t.Context(), []string{"-addr", "127.0.0.1:0", "-token-file", missing}, env(), io.Discard, io.Discard); exitCode(err) != exitError {
		t.Errorf("a missing token file: %v, exit %d; want 1", err, exitCode(err))
	}
}

// TestRunUnauthenticatedRefusesWebPages: -unauthenticated serves local
// tools, not a web page of another origin (a text/plain POST needs no
// preflight) nor one under a DNS-rebinding host name.
func TestRunUnauthenticatedRefusesWebPages(t *testing.T) {
	s := startRun(t, env(), "-addr", "127.0.0.1:0", "-unauthenticated")
	vars := s.exported(t)
	store, err := cfkv.New(cfkv.ConfigFromEnv(func(k string) string { return vars[k] }))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(t.Context(), "k", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	target := vars[cfkv.EnvBaseURL] + "accounts/" + vars[cfkv.EnvAccountID] + "/storage/kv/namespaces/" + vars[cfkv.EnvNamespaceID] + "/bulk/delete"
	u, _ := url.Parse(target)
	for name, h := range map[string]map[string]string{
		"cross-origin": {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"},
		"rebinding":    {"Host": "rebind.evil.example:" + u.Port()},
	} {
		req, _ := http.NewRequest("POST", target, strings.NewReader(`["k"]`))
		for k, v := range h {
			req.Header.Set(k, v)
		}
		req.Host = cmp.Or(h["Host"], req.Host)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `"success":false`) {
			t.Errorf("%s bulk/delete: %d %s, want 403 in the envelope", name, resp.StatusCode, body)
		}
	}
	if v, err := store.Get(t.Context(), "k"); err != nil || string(v) != "v" {
		t.Fatalf("the key the pages asked to delete: %q %v", v, err)
	}
}
