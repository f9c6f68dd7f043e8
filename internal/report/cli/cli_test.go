package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/internal/refused"
	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/internal/report/cli"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func runCLI(t *testing.T, getenv func(string) string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	// Nothing writes the stores of these tests: no key needs reading again.
	err := cli.Run(context.Background(), append([]string{"--settle", "0"}, args...), getenv, &out, &errb)
	return out.String(), errb.String(), cli.ExitCode(err)
}

func TestHelpTeaches(t *testing.T) {
	out, _, code := runCLI(t, env(nil), "--help")
	if code != cli.ExitOK {
		t.Fatalf("--help exit %d", code)
	}
	for _, want := range []string{"EXAMPLES", "EXIT CODES", "--demo", "--repair --apply", "--checkpoint", "CLOUDFLARE_API_TOKEN", "MONGODB_URI", "--min-parity"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help does not mention %s", want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	full := env(map[string]string{
		"CLOUDFLARE_ACCOUNT_ID": "a", "CLOUDFLARE_KV_NAMESPACE_ID": "n",
		"CLOUDFLARE_API_TOKEN": "SECRET-TOKEN", "MONGODB_URI": "mongodb://user:SECRET-PASS@127.0.0.1:1/db",
	})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "not defined"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--format", "pdf"}, "--format"},
		{[]string{"--keys", "clear"}, "--keys"},
		{[]string{"--sample", "2"}, "--sample"},
		{[]string{"--apply"}, "--apply needs --repair"},
		{[]string{"--min-parity", "101%"}, "--min-parity 101%: a percentage is 0% to 100%"},
		{[]string{"--min-parity", "99.9"}, "write 99.9% for 99.9 percent (or 0.999 as a fraction)"},
		{[]string{"--min-parity", "1.5"}, "write 1.5% for 1.5 percent (or 0.015 as a fraction)"},
		{[]string{"--min-parity", "ninety"}, "write a percentage such as 99.9% or a fraction such as 0.999"},
		{[]string{"--min-parity", "-0.5"}, "--min-parity"},
		{[]string{"--min-parity", "99.99995%"}, "finer than"},
		{[]string{"--authoritative", "both"}, "--authoritative"},
		{[]string{"--force-authoritative"}, "--force-authoritative needs --authoritative"},
		{[]string{"--cf-budget", "12"}, "1200/5m"},
		{[]string{"--batch", "101"}, "100 keys"},
		{[]string{"--cf-max-bulk-write", "10001"}, "1 to 10000 pairs"},
		{[]string{"--progress", "sometimes"}, "--progress"},
		{[]string{"--progress-every", "-1s"}, "--progress-every"},
	} {
		_, errOut, code := runCLI(t, full, c.args...)
		if code != cli.ExitError || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "--help") {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, errOut)
		}
		if strings.Contains(errOut, "SECRET") {
			t.Errorf("%v: stderr leaks a secret: %q", c.args, errOut)
		}
	}
	_, errOut, code := runCLI(t, env(nil))
	if code != cli.ExitError || !strings.Contains(errOut, "CLOUDFLARE_API_TOKEN") || !strings.Contains(errOut, "--demo") {
		t.Errorf("no environment: exit %d, %q", code, errOut)
	}
}

func TestDemoGateAndRepair(t *testing.T) {
	out, errOut, code := runCLI(t, env(nil), "--demo", "--progress", "never")
	if code != cli.ExitBelowParity || !strings.Contains(out, "FAIL: parity 88.00%") {
		t.Fatalf("demo: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "demo") || strings.Contains(errOut, "\r") {
		t.Errorf("stderr = %q", errOut)
	}
	if _, _, code := runCLI(t, env(nil), "--demo", "--min-parity", "88%"); code != cli.ExitOK {
		t.Errorf("88%% against a 88%% gate: exit %d", code)
	}
	out, _, code = runCLI(t, env(nil), "--demo", "--repair")
	if code != cli.ExitBelowParity || !strings.Contains(out, "dry run") {
		t.Errorf("dry run: exit %d\n%s", code, out)
	}
	out, _, code = runCLI(t, env(nil), "--demo", "--repair", "--apply")
	if code != cli.ExitOK || !strings.Contains(out, "PASS: parity after repair 100.00%") {
		t.Errorf("repair: exit %d\n%s", code, out)
	}
}

// The gate takes a percentage with its sign or a fraction of one, and shows
// the minimum as given: 0.999 is 99.9%, never 0.999% (which would pass the
// demo's 88%).
func TestMinParityForms(t *testing.T) {
	for _, c := range []struct {
		arg, verdict string
		code         int
	}{
		{"0.999", "FAIL: parity 88.00% < minimum 99.9%", cli.ExitBelowParity},
		{"99.9%", "FAIL: parity 88.00% < minimum 99.9%", cli.ExitBelowParity},
		{"0.88", "PASS: parity 88.00% >= minimum 88%", cli.ExitOK},
		{"88.001%", "FAIL: parity 88.000% < minimum 88.001%", cli.ExitBelowParity},
		{"1", "FAIL: parity 88.00% < minimum 100%", cli.ExitBelowParity},
		{"0", "PASS: parity 88.00% >= minimum 0%", cli.ExitOK},
		{"0%", "PASS: parity 88.00% >= minimum 0%", cli.ExitOK},
	} {
		out, errOut, code := runCLI(t, env(nil), "--demo", "--min-parity", c.arg, "--progress", "never")
		if code != c.code || !strings.Contains(out, c.verdict) || !strings.Contains(errOut, "shadow-report: "+c.verdict+"\n") {
			t.Errorf("--min-parity %s: exit %d, want %d and %q\nstdout %s\nstderr %s", c.arg, code, c.code, c.verdict, out, errOut)
		}
	}
}

// The verdict reaches stderr whatever the output: a file, JSON on stdout.
func TestVerdictOnStderr(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.html")
	for _, args := range [][]string{{"--out", path}, {"--format", "json"}, {}} {
		_, errOut, code := runCLI(t, env(nil), append([]string{"--demo", "--progress", "never"}, args...)...)
		if code != cli.ExitBelowParity || strings.Count(errOut, "FAIL: parity 88.00% < minimum 100%") != 1 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}

func TestOutputFiles(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ file, sniff string }{
		{"r.json", `"schema": "kvshadow.shadow-report"`},
		{"r.md", "# Shadow parity report"},
		{"r.html", "<!DOCTYPE html>"},
		{"r.txt", "MODULE"},
	} {
		path := filepath.Join(dir, c.file)
		out, errOut, code := runCLI(t, env(nil), "--demo", "--out", path, "--keys", "plain")
		if code != cli.ExitBelowParity || out != "" || !strings.Contains(errOut, "wrote "+path) {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", c.file, code, out, errOut)
		}
		raw, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(raw), c.sniff) {
			t.Fatalf("%s: %v, does not hold %q", c.file, err, c.sniff)
		}
		if strings.Contains(string(raw), `"guesses"`) || strings.Contains(string(raw), "crane") {
			t.Fatalf("%s holds a value", c.file)
		}
	}
	var r report.Report
	raw, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.Totals.Compared != 50 || r.Totals.Divergent != 6 || len(r.Divergences) != 6 || r.Divergences[0].Key != "loldle-emoji:daily" {
		t.Fatalf("json totals %+v, first key %q", r.Totals, r.Divergences[0].Key)
	}
}

func TestCancelledRunIsAnError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	err := cli.Run(ctx, []string{"--demo"}, env(nil), &out, &errb)
	if !errors.Is(err, context.Canceled) || cli.ExitCode(err) != cli.ExitError || out.Len() != 0 {
		t.Fatalf("err = %v, stdout %q", err, out.String())
	}
}

func TestProgressAndBudgetFlags(t *testing.T) {
	out, errOut, code := runCLI(t, env(nil), "--demo", "--progress", "always", "--cf-budget", "600/1m", "--mongo-budget", "unlimited", "--format", "json")
	if code != cli.ExitBelowParity {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "\r50 keys (at wordle)") || !strings.Contains(errOut, "\x1b[K") || !strings.Contains(errOut, "requests per 1m0s") {
		t.Errorf("progress = %q", errOut)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Primary.Budget != "600/1m0s" || r.Shadow.Budget != "unlimited" {
		t.Errorf("budgets %q / %q", r.Primary.Budget, r.Shadow.Budget)
	}
	// Not a terminal: auto writes plain lines, as --progress lines does.
	for _, mode := range []string{"auto", "lines"} {
		_, errOut, _ := runCLI(t, env(nil), "--demo", "--progress", mode, "--expected-keys", "50")
		if strings.ContainsAny(errOut, "\r\x1b") || !strings.Contains(errOut, "\nprogress: 50 of ~50 keys (100.0%) (at wordle)") {
			t.Errorf("--progress %s on a buffer: %q", mode, errOut)
		}
	}
	if _, errOut, _ := runCLI(t, env(nil), "--demo", "--progress", "never"); strings.Contains(errOut, "progress") {
		t.Errorf("--progress never: %q", errOut)
	}
}

func TestTelemetryFollowsTheEnvironment(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	out, errOut, code := runCLI(t, env(nil), "--demo", "--progress", "never", "--keys", "plain", "--repair", "--apply")
	if code != cli.ExitOK {
		t.Fatalf("demo: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{`"kvshadow.role"`, `"primary"`, `"shadow"`, `"cloudflare_kv"`, `"memory"`,
		`"Name":"list"`, `"Name":"get_many"`, `"Name":"put_many"`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("exported spans lack %s", want)
		}
	}
	// --keys plain shows keys in the report, never in telemetry; values
	// appear nowhere.
	if !strings.Contains(out, "wordle:games:1002") {
		t.Fatal("the report does not show plain keys")
	}
	for _, secret := range []string{"games:1002", "games:1003", "session:old", `"slate"`, "crane"} {
		if strings.Contains(errOut, secret) {
			t.Errorf("telemetry carries %q", secret)
		}
	}
}

// TestSaysWhichDatabase: a URI that names no database means the bot's,
// miti99bot, and the command says so at start, before it connects (here it
// cannot: nothing listens).
func TestSaysWhichDatabase(t *testing.T) {
	for _, tc := range []struct{ uri, db, want, warning string }{
		{"mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=50", "", "database miti99bot\n", ""},
		{"mongodb://u:SECRET@127.0.0.1:1/?serverSelectionTimeoutMS=50", "", "database miti99bot\n", ""},
		// An Atlas URI ending in /test, shared with the bot: the report
		// reads the bot's database, and warns.
		{"mongodb://127.0.0.1:1/test?serverSelectionTimeoutMS=50", "", "database miti99bot\n",
			`shadow-report: warning: MONGODB_URI names the database "test", but the report reads "miti99bot"`},
		{"mongodb://127.0.0.1:1/test?serverSelectionTimeoutMS=50", "test", "database test\n", ""},
		{"mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=50", "botdb", "database botdb\n", ""},
	} {
		_, errOut, code := runCLI(t, env(map[string]string{
			"CLOUDFLARE_ACCOUNT_ID": "a", "CLOUDFLARE_KV_NAMESPACE_ID": "n", "CLOUDFLARE_API_TOKEN": "t",
			"CLOUDFLARE_BASE_URL": "http://127.0.0.1:1", "MONGODB_URI": tc.uri, "MONGODB_DB": tc.db,
		}), "--progress", "never")
		if code != cli.ExitError || !strings.Contains(errOut, "shadow-report: MongoDB "+tc.want) || strings.Contains(errOut, "SECRET") {
			t.Errorf("%s: exit %d, stderr %q; want it to name %q", tc.uri, code, errOut, tc.want)
		}
		if tc.warning != "" && !strings.Contains(errOut, tc.warning) || tc.warning == "" && strings.Contains(errOut, "warning") {
			t.Errorf("%s, MONGODB_DB %q: stderr %q; want the warning %q", tc.uri, tc.db, errOut, tc.warning)
		}
	}
}

// One secret for the proxy and the report: the proxy's KVSHADOW_KEY_SECRET
// keys the report's hashes, so that a key can be followed from one run to
// the next and found in the proxy's /dirty; the older name still works, and
// two that disagree are refused.
func TestOneKeySecretWithTheProxy(t *testing.T) {
	hashes := func(vars map[string]string) string {
		t.Helper()
		out, errOut, code := runCLI(t, env(vars), "--demo", "--progress", "never", "--min-parity", "0%")
		if code != cli.ExitOK {
			t.Fatalf("%v: exit %d: %s", vars, code, errOut)
		}
		var keys []string
		for _, f := range strings.Fields(out) {
			if strings.Contains(f, ":#") {
				keys = append(keys, f)
			}
		}
		if len(keys) == 0 {
			t.Fatalf("no hashed key in:\n%s", out)
		}
		return strings.Join(keys, " ")
	}
	proxy := hashes(map[string]string{"KVSHADOW_KEY_SECRET": "one secret"})
	if again := hashes(map[string]string{"KVSHADOW_KEY_SECRET": "one secret"}); again != proxy {
		t.Errorf("hashes changed between two runs with one secret:\n%s\n%s", proxy, again)
	}
	if old := hashes(map[string]string{"KVSHADOW_REPORT_SECRET": "one secret"}); old != proxy {
		t.Errorf("KVSHADOW_REPORT_SECRET hashes otherwise than the same KVSHADOW_KEY_SECRET:\n%s\n%s", proxy, old)
	}
	if none := hashes(nil); none == proxy {
		t.Errorf("without a secret the hashes are the secret's")
	}
	_, errOut, code := runCLI(t, env(map[string]string{"KVSHADOW_KEY_SECRET": "one", "KVSHADOW_REPORT_SECRET": "two"}), "--demo")
	if code != cli.ExitError || !strings.Contains(errOut, "KVSHADOW_KEY_SECRET and KVSHADOW_REPORT_SECRET are both set and differ") {
		t.Errorf("two secrets that differ: exit %d, %s", code, errOut)
	}
}

// Both stores are checked at once, and each problem is said once, in one
// line, without the driver's topology dump or a secret: a wrong account is
// not hidden behind an unreachable MongoDB.
func TestBothStoresCheckedAtOnce(t *testing.T) {
	api, err := kvapi.New(kvapi.Config{
		Namespaces: map[string]kv.Store{"ns": memory.New(memory.Config{})},
		AccountID:  "real-account", Token: "SECRET-TOKEN",
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	closed, release, err := refused.Addr() // held: nothing else serves there meanwhile
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	vars := map[string]string{
		"CLOUDFLARE_ACCOUNT_ID": "wrong-account", "CLOUDFLARE_KV_NAMESPACE_ID": "ns",
		"CLOUDFLARE_API_TOKEN": "SECRET-TOKEN", "CLOUDFLARE_BASE_URL": srv.URL + "/client/v4/",
		"MONGODB_URI": "mongodb://user:SECRET-PASS@" + closed + "/miti99bot?serverSelectionTimeoutMS=300",
	}
	out, errOut, code := runCLI(t, env(vars), "--progress", "never")
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if len(lines) > 0 && lines[0] == "shadow-report: MongoDB database miti99bot" {
		lines = lines[1:] // said at start, not a problem
	}
	if code != cli.ExitError || out != "" || len(lines) != 2 {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	if want := "shadow-report: Workers KV (account wrong-account, namespace ns at " + strings.TrimPrefix(srv.URL, "http://") + "): refused, HTTP 404, code 7003"; !strings.HasPrefix(lines[0], want) ||
		!strings.HasSuffix(lines[0], "(check CLOUDFLARE_ACCOUNT_ID)") {
		t.Errorf("Workers KV line %q", lines[0])
	}
	if want := "shadow-report: MongoDB at " + closed + ": unreachable (connection refused: nothing listens there)"; lines[1] != want {
		t.Errorf("MongoDB line %q, want %q", lines[1], want)
	}
	for _, bad := range []string{"SECRET", "topology", "WARN", "mongokv"} {
		if strings.Contains(errOut, bad) {
			t.Errorf("stderr holds %q:\n%s", bad, errOut)
		}
	}

	// With the account right, only MongoDB's line remains.
	vars["CLOUDFLARE_ACCOUNT_ID"] = "real-account"
	_, errOut, code = runCLI(t, env(vars), "--progress", "never")
	if code != cli.ExitError || strings.Count(errOut, "\n") != 2 || !strings.Contains(errOut, "database miti99bot\nshadow-report: MongoDB at ") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
}
