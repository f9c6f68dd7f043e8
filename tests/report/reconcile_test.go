package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/internal/report/cli"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/service/admin"
	"github.com/kvshadow/kvshadow/tests/proxytest"
)

// TestReconciliationClearedByARecordedReport: kvshadow-proxy over an
// emulated Workers KV and MongoDB, its settle set bounded to two keys, is
// written three keys inside the consistency window and overflows; a full
// shadow-report run made before the overflow does not clear it, one made
// after does, through POST /reconciliation with the ID the report printed,
// and /stats says which run cleared it.
func TestReconciliationClearedByARecordedReport(t *testing.T) {
	db := srv.Database(t)
	primary := proxytest.NewPrimary(t)
	proxy := proxytest.Start(t, primary.Environment(srv.URI(), db),
		"--stage", "dualwrite", "--max-settle-keys", "2", "--consistency-window", "1m", "--heartbeat-interval", "50ms")
	adm := &admin.Client{URL: proxy.Admin, Token: proxytest.AdminToken}
	ctx := context.Background()
	env := map[string]string{
		"CLOUDFLARE_ACCOUNT_ID": proxytest.Account, "CLOUDFLARE_KV_NAMESPACE_ID": proxytest.Namespace,
		"CLOUDFLARE_API_TOKEN": proxytest.PrimaryToken, "CLOUDFLARE_BASE_URL": primary.URL,
		"MONGODB_URI": srv.URI(), "MONGODB_DB": db,
	}
	runReport := func() string {
		t.Helper()
		var out, errb bytes.Buffer
		err := cli.Run(ctx, []string{"--format", "json", "--progress", "never", "--settle", "0"}, func(k string) string { return env[k] }, &out, &errb)
		var r report.Report
		if jerr := json.Unmarshal(out.Bytes(), &r); err != nil || jerr != nil || !r.Passed || !strings.Contains(errb.String(), "recorded run "+r.RunID) {
			t.Fatalf("shadow-report: %v\n%s", err, errb.String())
		}
		return r.RunID
	}
	clearWith := func(run string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "POST", proxy.Admin+"reconciliation", strings.NewReader(fmt.Sprintf(`{"report":%q}`, run)))
		req.Header.Set("Authorization", "Bearer "+proxytest.AdminToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	early := runReport() // both stores empty: passes, sees no overflow

	client, err := cfkv.New(cfkv.Config{AccountID: proxytest.Account, NamespaceID: proxytest.Namespace, APIToken: proxytest.ClientToken, BaseURL: proxy.API, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"wordle:a", "wordle:b", "wordle:c"} {
		if err := client.Put(ctx, k, []byte("v"), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var st admin.StatsView
	recorded := until(t, func() bool {
		if st, err = adm.Stats(ctx); err != nil {
			t.Fatal(err)
		}
		return st.Summary.ReconciliationNeeded && st.Reconciliation[proxytest.Namespace].Overflow != "" && st.Total.Queued == 0
	})
	if !recorded {
		t.Fatalf("the overflow was not recorded: %+v", st.Reconciliation)
	}
	if code, body := clearWith(early); code != http.StatusConflict || !strings.Contains(body, "started before overflow") {
		t.Fatalf("a report from before the overflow: %d %s", code, body)
	}
	late := runReport()
	if code, body := clearWith(late); code != http.StatusOK {
		t.Fatalf("a report from after the overflow: %d %s", code, body)
	}
	if st, err = adm.Stats(ctx); err != nil {
		t.Fatal(err)
	}
	if rec := st.Reconciliation[proxytest.Namespace]; st.Summary.ReconciliationNeeded || rec.ClearedBy != late {
		t.Fatalf("after the clear: needed %v, reconciliation %+v", st.Summary.ReconciliationNeeded, rec)
	}
}

// until calls f every 20 ms until it returns true, for at most a minute.
func until(t *testing.T, f func() bool) bool {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if f() {
			return true
		}
	}
	return false
}
