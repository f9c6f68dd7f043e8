package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const unitFile = "systemd/kvshadow-proxy.service"

// unit is a systemd unit's [Service] section: each key's values, in order,
// with continuation lines joined.
func unit(t *testing.T, raw string) map[string][]string {
	t.Helper()
	raw = strings.ReplaceAll(raw, "\\\n", " ")
	out := map[string][]string{}
	section := ""
	for _, line := range strings.Split(raw, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("unit line %q", line)
			}
			out[section+k] = append(out[section+k], v)
		}
	}
	return out
}

func one(t *testing.T, u map[string][]string, key string) string {
	t.Helper()
	v := u["[Service]"+key]
	if len(v) == 0 {
		t.Fatalf("the unit has no %s", key)
	}
	return v[len(v)-1]
}

// The unit keeps the journal in its StateDirectory, hands the secrets over
// as credentials, waits long enough on stop for the drain, and sandboxes
// the service; the service's own parser accepts its command line.
func TestSystemdUnitKeepsTheInvariants(t *testing.T) {
	u := unit(t, string(mustRead(t, unitFile)))
	args := strings.Fields(one(t, u, "ExecStart"))[1:]
	if bin := strings.Fields(one(t, u, "ExecStart"))[0]; bin != "/usr/local/bin/kvshadow-proxy" {
		t.Errorf("ExecStart runs %s", bin)
	}
	state := t.TempDir()
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "${STATE_DIRECTORY}", state)
	}

	// Every secret is a credential, read from $CREDENTIALS_DIRECTORY.
	creds := map[string]string{}
	for _, lc := range u["[Service]LoadCredential"] {
		name, path, _ := strings.Cut(lc, ":")
		creds[name] = path
	}
	values := map[string]string{}
	files := secretFiles(args)
	if len(files) != 5 {
		t.Errorf("%d secrets from files, want 5: %v", len(files), files)
	}
	for flag, path := range files {
		name, ok := strings.CutPrefix(path, "${CREDENTIALS_DIRECTORY}/")
		if !ok || creds[name] == "" {
			t.Errorf("--%s %s is not a LoadCredential", flag, path)
		}
		values[name] = "from-" + name
		if strings.Contains(name, "mongo") {
			values[name] = "mongodb://db.example.net:27017"
		}
	}
	values["admin-token"] = "a-different-token"
	env := map[string]string{}
	envFile := one(t, u, "EnvironmentFile")
	for _, line := range strings.Split(string(mustRead(t, filepath.Join("systemd", filepath.Base(envFile)))), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			env[k] = v
		}
	}
	cfg := parseArgs(t, args, env, "${CREDENTIALS_DIRECTORY}", values)
	checkGuideStep2(t, "systemd", cfg)

	if one(t, u, "StateDirectory") == "" || cfg.JournalDir != state {
		t.Errorf("--journal-dir %q: want ${STATE_DIRECTORY}", cfg.JournalDir)
	}
	stop, err := time.ParseDuration(strings.TrimSpace(one(t, u, "TimeoutStopSec")) + "s")
	if err != nil || stop < stopTime(0, cfg) {
		t.Errorf("TimeoutStopSec %v does not cover %v (delay %v + grace %v + drain %v + %v)", stop, stopTime(0, cfg), cfg.ShutdownDelay, cfg.Grace, cfg.Drain, stopMargin)
	}
	if one(t, u, "KillSignal") != "SIGTERM" {
		t.Error("KillSignal: the drain starts on SIGTERM")
	}
	for key, want := range map[string]string{"DynamicUser": "yes", "NoNewPrivileges": "yes", "ProtectSystem": "strict",
		"ProtectHome": "yes", "PrivateTmp": "yes", "PrivateDevices": "yes", "CapabilityBoundingSet": "", "RestrictSUIDSGID": "yes"} {
		if got := one(t, u, key); got != want {
			t.Errorf("%s=%s, want %s", key, got, want)
		}
	}
	limit, err := strconv.ParseInt(strings.TrimSuffix(one(t, u, "MemoryMax"), "G"), 10, 64)
	if err != nil {
		t.Errorf("MemoryMax=%s: want whole gigabytes (1G)", one(t, u, "MemoryMax"))
	}
	checkBudget(t, "the unit", cfg, limit<<30)
	if !strings.HasPrefix(cfg.AdminListen, "127.0.0.1:") {
		t.Errorf("--admin-listen %s: keep the admin API on loopback on a VM", cfg.AdminListen)
	}
}

// systemd-analyze verify finds nothing to say about the unit (it exits 0
// even for an unknown key, so any output fails). It checks that the
// command exists: the unit is verified as installed, with the binary built.
func TestSystemdAnalyzeVerify(t *testing.T) {
	need(t, "systemd-analyze:systemd")
	dir := t.TempDir()
	bin := filepath.Join(dir, "kvshadow-proxy")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/kvshadow/kvshadow/cmd/kvshadow-proxy").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	verify := func(text string) string {
		path := filepath.Join(dir, "kvshadow-proxy.service")
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(text, "/usr/local/bin/kvshadow-proxy", bin)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("systemd-analyze", "verify", path).CombinedOutput()
		if err != nil {
			return string(out) + err.Error()
		}
		return string(out)
	}
	text := string(mustRead(t, unitFile))
	if out := verify(text); out != "" {
		t.Errorf("systemd-analyze verify %s:\n%s", unitFile, out)
	}
	// It would say something of a misspelt key.
	if out := verify(strings.Replace(text, "ProtectProc=", "ProtectProcs=", 1)); !strings.Contains(out, "ProtectProcs") {
		t.Errorf("systemd-analyze verify is silent on a misspelt key: %q", out)
	}
}
