package service

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/kv"
)

// TestPrimaryAnswersDrawFromTheBudget: a bulk get through the proxy of a
// 25 MiB value that is not UTF-8 makes the primary answer about 150 MiB of
// escaped JSON, which the proxy's client decodes in copies; past what the
// budget grants, the proxy stops reading it (kvshadow_memory_refused_total
// says so) and reads the value alone, by its own GET, instead of holding
// it: the bulk get is served.
func TestPrimaryAnswersDrawFromTheBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("moves about a gigabyte in-process")
	}
	r := start(t, "--memory-budget", "256MiB")
	values := r.api + "accounts/" + DemoAccount + "/storage/kv/namespaces/" + DemoNamespace + "/"
	send := func(method, path string, body []byte) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), method, values+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+r.c.secrets.token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		return res, raw
	}
	if res, raw := send("PUT", "values/big", bytes.Repeat([]byte{0xff}, kv.MaxValueSize)); res.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %d %s", res.StatusCode, raw)
	}
	res, raw := send("POST", "bulk/get", []byte(`{"keys":["big"]}`))
	if res.StatusCode != http.StatusOK || !bytes.HasPrefix(raw, []byte(`{"success":true`)) || !bytes.Contains(raw, []byte(`"big":"\ufffd`)) {
		t.Fatalf("a bulk get whose primary answer is past the budget: %d %.200s", res.StatusCode, raw)
	}
	lines := grep(r.scrape(t), "kvshadow_memory_refused_total{")
	if lines == "" || strings.HasSuffix(lines, " 0") {
		t.Fatalf("the refusals are not counted: %q", lines)
	}
}

// grep keeps the lines of s that hold sub.
func grep(s, sub string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
