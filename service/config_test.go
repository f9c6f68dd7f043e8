package service

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/dualwrite"
)

func env(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }

var full = map[string]string{
	"CLOUDFLARE_ACCOUNT_ID": "acc", "CLOUDFLARE_KV_NAMESPACE_ID": "ns1",
	"CLOUDFLARE_API_TOKEN": "cf-SECRET", "MONGODB_URI": "mongodb://u:pw-SECRET@127.0.0.1:1/bot",
	"KVSHADOW_TOKEN": "client-SECRET", "KVSHADOW_ADMIN_TOKEN": "admin-SECRET",
}

func with(extra map[string]string, drop ...string) map[string]string {
	m := map[string]string{}
	for k, v := range full {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	for _, k := range drop {
		delete(m, k)
	}
	return m
}

func TestParseFromTheEnvironment(t *testing.T) {
	c, err := Parse(nil, env(full))
	if err != nil {
		t.Fatal(err)
	}
	if c.Account != "acc" || len(c.Namespaces) != 1 || c.Namespaces[0] != (Namespace{ID: "ns1", Database: "miti99bot"}) || c.Store.Stage != dualwrite.Off ||
		c.secrets.token != "client-SECRET" || c.secrets.admin != "admin-SECRET" || c.Listen != DefaultListen {
		t.Fatalf("config %+v", c)
	}
	c, err = Parse([]string{"--namespace", "a=db_a,b=db_b", "--stage", "dual-write", "--mongo-db", "x"}, env(full))
	if err != nil || len(c.Namespaces) != 2 || c.Namespaces[1] != (Namespace{ID: "b", Database: "db_b"}) || c.Store.Stage != dualwrite.DualWrite {
		t.Fatalf("namespaces %+v, %v", c, err)
	}
	// Secrets from files.
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("from-file-SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = Parse([]string{"--token-file", file}, env(with(nil, "KVSHADOW_TOKEN")))
	if err != nil || c.secrets.token != "from-file-SECRET" {
		t.Fatalf("token file: %v", err)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, with(nil, "KVSHADOW_TOKEN"), "KVSHADOW_TOKEN (or --token-file), the clients' token"},
		{nil, with(nil, "KVSHADOW_ADMIN_TOKEN"), "KVSHADOW_ADMIN_TOKEN"},
		{nil, with(nil, "MONGODB_URI", "CLOUDFLARE_API_TOKEN"), "CLOUDFLARE_API_TOKEN (or --cf-token-file), MONGODB_URI"},
		{nil, map[string]string{}, "try --demo"},
		{[]string{"--unauthenticated-loopback", "--listen", "0.0.0.0:8790"}, with(nil, "KVSHADOW_TOKEN", "KVSHADOW_ADMIN_TOKEN"), "loopback only"},
		{[]string{"--unauthenticated-loopback"}, full, "contradict"},
		{nil, with(map[string]string{"KVSHADOW_ADMIN_TOKEN": "client-SECRET"}), "must differ"},
		{[]string{"--namespace", "a,b"}, full, `would share the database "miti99bot"`},
		{[]string{"--namespace", "a,a=x"}, full, "given twice"},
		{[]string{"--stage", "sideways"}, full, "--stage"},
		{[]string{"--compare-rate", "2"}, full, "--compare-rate"},
		{[]string{"--lanes", "0"}, full, "--lanes"},
		{[]string{"--memory-budget", "lots"}, full, "--memory-budget"},
		{[]string{"--memory-budget", "16MiB"}, full, "leaves nothing"},
		{[]string{"--poll-interval", "0s"}, full, "--poll-interval"},
		{[]string{"--fence-interval", "3s"}, full, "--fence-interval 3s is shorter than --tee-lease 30s + --tee-invocation 31s"},
		{[]string{"--tee-lease", "5s", "--tee-invocation", "2s", "--fence-interval", "6s"}, full, "--fence-interval 6s is shorter than --tee-lease 5s + --tee-invocation 2s"},
		{[]string{"--tls-cert", "c.pem"}, full, "go together"},
		{[]string{"--token-file", "/nonexistent/x"}, full, "KVSHADOW_TOKEN"},
		{[]string{"--token", "x"}, full, "not defined"},
		{[]string{"serve"}, full, "unexpected argument"},
		{[]string{"--demo", "--listen", "0.0.0.0:1"}, nil, "loopback only"},
	} {
		_, err := Parse(tc.args, env(tc.env))
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a usage error with %q", tc.args, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%v: the error quotes a secret: %v", tc.args, err)
		}
		if ExitCode(err) != ExitUsage {
			t.Errorf("%v: exit %d", tc.args, ExitCode(err))
		}
	}
	if _, err := Parse([]string{"--help"}, env(nil)); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
}

func TestUnauthenticatedOnLoopbackOnly(t *testing.T) {
	c, err := Parse([]string{"--unauthenticated-loopback", "--listen", "localhost:0", "--admin-listen", "[::1]:0"}, env(with(nil, "KVSHADOW_TOKEN", "KVSHADOW_ADMIN_TOKEN")))
	if err != nil || !c.Unauthenticated || c.secrets.token != "" {
		t.Fatalf("%+v, %v", c, err)
	}
}

func TestDemoNeedsNothing(t *testing.T) {
	c, err := Parse([]string{"--demo"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Demo || c.Account != DemoAccount || c.Namespaces[0].ID != DemoNamespace || c.Store.Stage != dualwrite.Shadow ||
		!strings.HasPrefix(c.secrets.token, "demo-client-") || c.secrets.token == c.secrets.admin {
		t.Fatalf("demo config %+v", c)
	}
}

func TestHelpTeaches(t *testing.T) {
	for _, want := range []string{"--demo", "CLOUDFLARE_API_TOKEN", "MONGODB_URI", "KVSHADOW_TOKEN", "KVSHADOW_ADMIN_TOKEN",
		"--tls-cert", "PUT /stage", "/readyz", "--unauthenticated-loopback", "EXIT CODES", "second signal", "never a flag"} {
		if !strings.Contains(Help, want) {
			t.Errorf("--help does not mention %s", want)
		}
	}
	// The shadow database's default is the bot's, whatever the URI says.
	if want := "(default " + mongokv.DefaultDatabase + ", the bot's"; !strings.Contains(Help, want) {
		t.Errorf("--help does not give the default database as %q", want)
	}
}
