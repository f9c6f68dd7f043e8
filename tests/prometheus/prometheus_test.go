package prometheus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/internal/syncbuf"
	"github.com/kvshadow/kvshadow/internal/tools"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/service"
	"github.com/kvshadow/kvshadow/service/admin"
	"github.com/kvshadow/kvshadow/tests/command"
	"github.com/kvshadow/kvshadow/tests/mongotest"
	"github.com/kvshadow/kvshadow/tests/proxytest"
)

// job is the scrape job's name, which the alert rules select on.
const job = "kvshadow-proxy"

func TestPrometheusEvaluatesTheDashboardAndTheAlerts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Prometheus for a minute or two")
	}
	need(t, "prometheus:prometheus")
	ctx := t.Context()
	dir := t.TempDir()

	// The primary: an emulated Workers KV account; the shadow: the embedded
	// server, through a relay the test can cut.
	primary := proxytest.NewPrimary(t)
	cut, uri := mongotest.NewRelay(t, srv)
	db := srv.Database(t)
	p := proxytest.Start(t, primary.Environment(uri, db), "--instance", "prometheus-test",
		"--stage", "shadow", "--journal-dir", filepath.Join(dir, "journal"), "--consistency-window", "0", "--compare-rate", "1",
		"--shadow-timeout", "1s", "--breaker-failures", "3", "--breaker-open-timeout", "12s", "--probe-interval", "1s", "--repair-interval", "1s")

	prom := startPrometheus(t, dir, p.Admin)

	// Bot traffic from now to the end, through cloudflare-go.
	client, err := cfkv.New(cfkv.Config{AccountID: proxytest.Account, NamespaceID: proxytest.Namespace, APIToken: proxytest.ClientToken, BaseURL: p.API, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	botErrors := bot(t, client)

	// A divergence written around the layer, suspected by a comparison and
	// confirmed by verification.
	adm := &admin.Client{URL: p.Admin, Token: proxytest.AdminToken}
	if err := client.Put(ctx, "wordle:diverged", []byte("through the proxy"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the copy", func() bool { s, err := adm.Stats(ctx); return err == nil && s.Total.Queued == 0 })
	mc, err := mongokv.NewClient(mongokv.ClientConfig{URI: srv.URI()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Close(context.Background()) })
	shadow, err := mc.Store(mongokv.Config{Database: db})
	if err != nil {
		t.Fatal(err)
	}
	if err := shadow.Put(ctx, "wordle:diverged", []byte("behind the proxy"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Get(ctx, "wordle:diverged"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a suspicion", func() bool { s, err := adm.Stats(ctx); return err == nil && s.Total.Comparisons["suspected"] > 0 })
	if err := adm.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a confirmed divergence", func() bool { s, err := adm.Stats(ctx); return err == nil && s.Total.Divergences > 0 })

	// A tee with a wrong token: its copy is refused, and counted as such.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Origin+service.TeePath+"ingest", strings.NewReader(`{"writes":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer not-the-clients-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a tee copy with a wrong token: %s, want 401", resp.Status)
	}

	// The outage: MongoDB unreachable until the breaker alert fires (its
	// "for" of 5 s, its scrapes and evaluations: about 7 s, within the 12 s
	// the breaker stays open before it tries MongoDB again), then back.
	cut.Cut(true)
	eventually(t, "KVShadowBreakerOpen firing", func() bool { return prom.firing(t, "KVShadowBreakerOpen") })
	cut.Cut(false)
	eventually(t, "the breaker closed again", func() bool {
		s, err := adm.Stats(ctx)
		return err == nil && s.Total.Breaker == "closed"
	})
	// Scrapes after the outage, so that every rate has samples on both sides.
	prom.waitScrapes(t, 5)

	// Every panel's queries return series.
	for _, q := range dashboardQueries(t) {
		if n := prom.series(t, q.expr); n == 0 {
			t.Errorf("panel %q: %s returns no series", q.panel, q.expr)
		}
	}
	// Every alert's expression, its thresholds turned into bool comparisons
	// (so that a quiet alert still shows its series), returns series.
	for _, r := range prom.alertRules(t) {
		if n := prom.series(t, boolify(r.Expr)); n == 0 {
			t.Errorf("alert %s: %s returns no series", r.Alert, boolify(r.Expr))
		}
	}
	if n := botErrors(); n != 0 {
		t.Errorf("the bot saw %d errors: the outage was MongoDB's, which the callers never feel", n)
	}
}

// bot writes, reads, lists and deletes through the proxy until the test
// ends; the result counts the errors it saw.
func bot(t *testing.T, st *cfkv.Store) func() int {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			key := fmt.Sprintf("bot:games:%d", i%40)
			var err error
			switch i % 5 {
			case 0, 1:
				err = st.Put(ctx, key, []byte(fmt.Sprintf(`{"turn":%d}`, i)), kv.PutOptions{})
			case 2:
				_, err = st.Get(ctx, key)
			case 3:
				_, err = st.List(ctx, kv.ListOptions{Prefix: "bot:", Limit: 10})
			case 4:
				err = st.Delete(ctx, key)
			}
			if err != nil && !errors.Is(err, kv.ErrNotFound) && ctx.Err() == nil {
				mu.Lock()
				errs++
				mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond) // a bot's pace, not a measurement
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return func() int { mu.Lock(); defer mu.Unlock(); return errs }
}

// prometheus is a Prometheus server the test started.
type prometheus struct{ url string }

// startPrometheus runs Prometheus scraping the admin listener at adminURL
// every second with the admin token, with the alert rules evaluated every
// second and their "for" shortened to 5 s.
func startPrometheus(t *testing.T, dir, adminURL string) *prometheus {
	t.Helper()
	target, err := url.Parse(adminURL)
	if err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(dir, "admin-token")
	write(t, token, proxytest.AdminToken)
	rules := regexp.MustCompile(`(?m)^(\s+for:) \S+$`).ReplaceAllString(string(read(t, "../../deploy/prometheus/kvshadow-alerts.yml")), "$1 5s")
	write(t, filepath.Join(dir, "kvshadow-alerts.yml"), rules)
	write(t, filepath.Join(dir, "prometheus.yml"), fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [kvshadow-alerts.yml]
scrape_configs:
  - job_name: %s
    metrics_path: /metrics
    authorization:
      type: Bearer
      credentials_file: %s
    static_configs:
      - targets: [%q]
`, job, token, target.Host))
	// Prometheus binds a port of its own and logs it (at info): a port
	// picked and closed could be taken before it binds, and the test would
	// query whatever serves there.
	var logs syncbuf.Buffer
	cmd := exec.Command("prometheus", "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:0", "--log.level=info")
	cmd.Dir = dir
	at, err := command.Announced(cmd, &logs, listeningOn)
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("prometheus's log:\n%s", logs.String())
		}
	})
	p := &prometheus{}
	eventually(t, "Prometheus ready", func() bool {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("prometheus exited: %v\n%s", err, logs.String())
		case addr := <-at:
			p.url = "http://" + addr
		default:
		}
		if p.url == "" {
			return false
		}
		resp, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	eventually(t, "a scrape of the proxy", func() bool { return p.series(t, `up{job="`+job+`"} == 1`) == 1 })
	return p
}

// api calls Prometheus's HTTP API and decodes its data.
func (p *prometheus) api(t *testing.T, path string, query url.Values, data any) {
	t.Helper()
	resp, err := http.Get(p.url + path + "?" + query.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if out.Status != "success" {
		t.Fatalf("%s %v: %s", path, query, out.Error)
	}
	if err := json.Unmarshal(out.Data, data); err != nil {
		t.Fatal(err)
	}
}

// series evaluates expr now and counts the series of its result.
func (p *prometheus) series(t *testing.T, expr string) int {
	t.Helper()
	var data struct {
		ResultType string            `json:"resultType"`
		Result     []json.RawMessage `json:"result"`
	}
	p.api(t, "/api/v1/query", url.Values{"query": {expr}}, &data)
	return len(data.Result)
}

// listeningOn is Prometheus's log line with the address its web listener
// bound (exporter-toolkit's, Prometheus 2.42).
var listeningOn = regexp.MustCompile(`msg="Listening on" address=(\S+)`)

// firing reports whether alert is firing.
func (p *prometheus) firing(t *testing.T, alert string) bool {
	t.Helper()
	var data struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	}
	p.api(t, "/api/v1/alerts", nil, &data)
	for _, a := range data.Alerts {
		if a.Labels["alertname"] == alert && a.State == "firing" {
			return true
		}
	}
	return false
}

// rule is one alert rule as Prometheus loaded it.
type rule struct {
	Alert string `json:"name"`
	Expr  string `json:"query"`
}

// alertRules are the rules Prometheus loaded from the rule file.
func (p *prometheus) alertRules(t *testing.T) []rule {
	t.Helper()
	var data struct {
		Groups []struct {
			Rules []rule `json:"rules"`
		} `json:"groups"`
	}
	p.api(t, "/api/v1/rules", url.Values{"type": {"alert"}}, &data)
	var out []rule
	for _, g := range data.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) < 12 {
		t.Fatalf("Prometheus loaded only %d alert rules", len(out))
	}
	return out
}

// waitScrapes waits for n more scrapes of the proxy.
func (p *prometheus) waitScrapes(t *testing.T, n int) {
	t.Helper()
	count := func() int {
		var data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		}
		p.api(t, "/api/v1/query", url.Values{"query": {`count_over_time(up{job="` + job + `"}[1h])`}}, &data)
		if len(data.Result) == 0 {
			return 0
		}
		var v int
		fmt.Sscan(fmt.Sprint(data.Result[0].Value[1]), &v)
		return v
	}
	from := count()
	eventually(t, "more scrapes", func() bool { return count() >= from+n })
}

// eventually polls cond: a wait for an asynchronous outcome, never a
// measurement of time.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in 3 minutes", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// need makes sure the commands are there (tools.Need).
func need(t *testing.T, pairs ...string) {
	t.Helper()
	tools.Need(t, "../../scripts/need.sh", pairs...)
}
