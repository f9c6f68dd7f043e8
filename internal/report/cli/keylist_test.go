package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/internal/report/cli"
)

// --keys-file checks and repairs only the listed keys of the demo's stores.
func TestKeysFile(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "dirty.txt")
	// CRLF, a blank line, a duplicate and a key on neither side.
	keys := "wordle:games:1002\r\nwordle:config\n\nwordle:games:1002\nloldle-emoji:session:old\nwordle:never-written\n"
	if err := os.WriteFile(list, []byte(keys), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, env(nil), "--demo", "--progress", "never", "--format", "json", "--keys-file", list)
	if code != cli.ExitBelowParity {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Scope.KeyList != 4 || r.Totals.Compared != 4 || r.Totals.Divergent != 2 || r.Primary.Requests.List != 0 {
		t.Fatalf("key list %d, totals %+v, primary requests %+v", r.Scope.KeyList, r.Totals, r.Primary.Requests)
	}
	if strings.Contains(out, "never-written") {
		t.Error("the JSON lists a key of the file that does not diverge")
	}

	out, _, code = runCLI(t, env(nil), "--demo", "--progress", "never", "--keys-file", list, "--repair", "--apply")
	if code != cli.ExitOK || !strings.Contains(out, "a list of 4 keys, not a full scan") {
		t.Errorf("repair of the list: exit %d\n%s", code, out)
	}

	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("wordle:ok\n..\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		bad:                             "line 2",
		filepath.Join(dir, "none.txt"):  "--keys-file",
		filepath.Join(dir, "empty.txt"): "holds no key",
	} {
		if strings.HasSuffix(file, "empty.txt") {
			if err := os.WriteFile(file, []byte("\n\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_, errOut, code := runCLI(t, env(nil), "--demo", "--keys-file", file)
		if code != cli.ExitError || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, stderr %q", filepath.Base(file), code, errOut)
		}
	}
}
