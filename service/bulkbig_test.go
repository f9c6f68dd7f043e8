package service

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// A value that is not UTF-8, written through the proxy, is served by a
// bulk get though bulk/get's answer of it from the primary (each byte
// escaped, six times its size, charged three times as it is decoded) could
// never fit the memory budget: the primary is asked for it alone, by its
// own GET. Under the default budget of 512 MiB that is a value of 25 MiB
// (the case found: 503 after 12 s, every time); here, a value of 8 MiB
// under a budget of 128 MiB, the same at a third of the bytes.
func TestABulkGetServesAValueWhoseBulkAnswerNeverFits(t *testing.T) {
	r := start(t, "--stage", "dualwrite", "--memory-budget", "128MiB")
	big := bytes.Repeat([]byte{0xff, 0xfe, 0x00, 0x80}, 8<<20/4)
	if err := r.client(t, DemoNamespace).Put(t.Context(), "wordle:big", big, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, r.api+"accounts/"+r.c.Account+"/storage/kv/namespaces/"+DemoNamespace+"/bulk/get",
		strings.NewReader(`{"keys":["wordle:big","wordle:none"]}`))
	req.Header.Set("Authorization", "Bearer "+r.c.secrets.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Success bool `json:"success"`
		Result  struct {
			Values map[string]*string `json:"values"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || !out.Success {
		t.Fatalf("bulk get of an 8 MiB value that is not UTF-8: %d, %v, after %s", resp.StatusCode, err, time.Since(began))
	}
	// bulk/get answers text: each byte that is not UTF-8 is U+FFFD, as
	// Workers KV's own does.
	if v := out.Result.Values["wordle:big"]; v == nil || !strings.HasPrefix(*v, "\ufffd\ufffd\x00\ufffd") {
		t.Fatalf("the value is not in the answer")
	}
	if v, ok := out.Result.Values["wordle:none"]; !ok || v != nil {
		t.Fatalf("a missing key: %v, %v", v, ok)
	}
	t.Logf("served in %s", time.Since(began))
}
