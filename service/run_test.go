package service

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvfault"
	"github.com/kvshadow/kvshadow/service/admin"
)

// running is a service started by a test.
type running struct {
	c       *Config
	api     string // the Workers KV API root, ".../client/v4/"
	admin   string // the admin API root, ".../"
	shadows map[string]*kvfault.Store
	primary map[string]*kvfault.Store
	stderr  string // the log, once stopped
	banner  strings.Builder
	stop    func() error
}

// start runs the demo assembly on free loopback ports; each namespace's
// shadow is wrapped in a kvfault.Store the test can break.
func start(t *testing.T, args ...string) *running {
	t.Helper()
	return startWith(t, nil, args...)
}

// startWith is start with edit applied to the demo's Backends.
func startWith(t *testing.T, edit func(*Backends), args ...string) *running {
	t.Helper()
	c, err := Parse(append([]string{"--demo", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--consistency-window", "0", "--fence-interval", "0"}, args...), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	r := &running{c: c, shadows: map[string]*kvfault.Store{}, primary: map[string]*kvfault.Store{}}
	open := func(ctx context.Context, c *Config, p Plumbing) (*Backends, error) {
		b, err := OpenDemo(ctx, c, p)
		if err != nil {
			return nil, err
		}
		for i := range b.Sides {
			f, err := kvfault.New(b.Sides[i].Shadow, kvfault.Config{Name: "shadow"})
			if err != nil {
				return nil, err
			}
			b.Sides[i].Shadow = f
			r.shadows[b.Sides[i].ID] = f
			p, err := kvfault.New(b.Sides[i].Primary, kvfault.Config{Name: "primary"})
			if err != nil {
				return nil, err
			}
			b.Sides[i].Primary = p
			r.primary[b.Sides[i].ID] = p
		}
		if edit != nil {
			edit(b)
		}
		return b, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	errOut, errW := io.Pipe()
	var logs strings.Builder
	logDone := make(chan struct{})
	go func() { defer close(logDone); _, _ = io.Copy(&logs, errOut) }()
	up := make(chan Listening, 1)
	go func() {
		err := Run(ctx, c, &r.banner, errW, WithBackends(open), WithListening(func(l Listening) { up <- l }))
		errW.Close()
		done <- err
	}()
	select {
	case at := <-up:
		r.api, r.admin = at.API, at.Admin
	case err := <-done:
		cancel()
		t.Fatalf("the service did not start: %v", err)
	}
	var result error
	stopped := false
	r.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			result = <-done
			<-logDone
			r.stderr = logs.String()
		}
		return result
	}
	t.Cleanup(func() { _ = r.stop() })
	return r
}

// client is cloudflare-go (through cfkv) pointed at the service.
func (r *running) client(t *testing.T, ns string) *cfkv.Store {
	t.Helper()
	st, err := cfkv.New(cfkv.Config{AccountID: r.c.Account, NamespaceID: ns, APIToken: r.c.secrets.token, BaseURL: r.api, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// adminClient is the admin API's client, with the admin token.
func (r *running) adminClient() *admin.Client {
	return &admin.Client{URL: r.admin, Token: r.c.secrets.admin}
}

// call sends an admin request and decodes the JSON answer into out.
func (r *running) call(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	code, err := r.adminClient().Do(t.Context(), method, path, body, out)
	if _, refused := err.(*admin.Error); err != nil && !refused {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return code
}

// tee sends a raw request to the tee's endpoints with the clients' token:
// a POST of body, or a GET of the stage.
func (r *running) tee(t *testing.T, path, body string) (int, string) {
	t.Helper()
	origin, _, _ := strings.Cut(r.api, "/client/v4/")
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, origin+path, strings.NewReader(body))
	if path == TeePath+"stage" {
		req.Method = http.MethodGet
	}
	req.Header.Set("Authorization", "Bearer "+r.c.secrets.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

func (r *running) stats(t *testing.T) admin.StatsView {
	t.Helper()
	s, err := r.adminClient().Stats(t.Context())
	if err != nil {
		t.Fatalf("GET /stats: %v", err)
	}
	return s
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in 20s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestDemoServesThroughCloudflareGo(t *testing.T) {
	r := start(t)
	// The banner tells a client everything it needs.
	for _, want := range []string{"export CLOUDFLARE_API_BASE_URL=" + strings.TrimSuffix(r.api, "/") + " CLOUDFLARE_BASE_URL=" + r.api, "CLOUDFLARE_ACCOUNT_ID=" + DemoAccount,
		"CLOUDFLARE_KV_NAMESPACE_ID=" + DemoNamespace, "CLOUDFLARE_API_TOKEN=" + r.c.secrets.token, "admin API at " + r.admin,
		"tee mode's endpoints at "} {
		if !strings.Contains(r.banner.String(), want) {
			t.Errorf("the demo's banner lacks %q:\n%s", want, r.banner.String())
		}
	}
	ctx := t.Context()
	cl := r.client(t, DemoNamespace)
	if err := cl.Put(ctx, "wordle:games:1", []byte(`{"g":1}`), kv.PutOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	v, err := cl.Get(ctx, "wordle:games:1")
	if err != nil || string(v) != `{"g":1}` {
		t.Fatalf("Get = %q, %v", v, err)
	}
	page, err := cl.List(ctx, kv.ListOptions{Prefix: "wordle:"})
	if err != nil || len(page.Keys) != 1 || !page.Done {
		t.Fatalf("List = %+v, %v", page, err)
	}
	// The copy reached the shadow, with its expiry.
	eventually(t, "the copy in the shadow", func() bool {
		e, err := r.shadows[DemoNamespace].Inner().(kv.ExpiryGetter).GetEntry(ctx, "wordle:games:1")
		return err == nil && string(e.Value) == `{"g":1}` && !e.Expiration.IsZero()
	})
	if err := cl.Delete(ctx, "wordle:games:1"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Get(ctx, "wordle:games:1"); !errorsIs(err, kv.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	// A client without the token is refused with Cloudflare's envelope.
	resp, err := http.Get(r.api + "accounts/" + r.c.Account + "/storage/kv/namespaces/" + DemoNamespace + "/keys")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), `"code":9106`) {
		t.Fatalf("no token: %d %s", resp.StatusCode, raw)
	}
	// The admin token is not a client token, nor the other way round.
	bad, _ := cfkv.New(cfkv.Config{AccountID: r.c.Account, NamespaceID: DemoNamespace, APIToken: r.c.secrets.admin, BaseURL: r.api, MaxRetries: -1})
	if _, err := bad.Get(ctx, "k"); err == nil || errorsIs(err, kv.ErrNotFound) {
		t.Fatalf("the admin token opened the client API: %v", err)
	}
	req, _ := http.NewRequest("GET", r.admin+"stats", nil)
	req.Header.Set("Authorization", "Bearer "+r.c.secrets.token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the client token opened the admin API: %d", resp.StatusCode)
	}
	if err := r.stop(); err != nil {
		t.Fatalf("Run after cancel = %v", err)
	}
}

func TestShutdownKeepsTheDirtyKeys(t *testing.T) {
	dir := t.TempDir()
	r := start(t, "--dirty-dir", dir)
	ctx := t.Context()
	cl := r.client(t, DemoNamespace)
	r.shadows[DemoNamespace].SetOutage(true)
	keys := []string{"wordle:a", "wordle:b", "trading:c"}
	for _, k := range keys {
		if err := cl.Put(ctx, k, []byte("v"), kv.PutOptions{}); err != nil {
			t.Fatalf("Put %s with the shadow down: %v", k, err)
		}
	}
	eventually(t, "three dirty keys", func() bool { return r.stats(t).Total.Dirty == 3 })
	var ready map[string]any
	if code := r.call(t, "GET", "/readyz", "", &ready); code != http.StatusOK {
		t.Fatalf("a failing shadow made the service unready: %v", ready)
	}
	if err := r.stop(); err != nil {
		t.Fatalf("Run = %v, want nil after a drain that left dirty keys", err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, DemoNamespace+".keys"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(raw)); strings.Join(got, ",") != "trading:c,wordle:a,wordle:b" {
		t.Fatalf("kept %q", got)
	}
	if !strings.Contains(r.stderr, "stopped with keys left dirty") {
		t.Fatalf("the log does not say keys were left dirty:\n%s", r.stderr)
	}

	// Without --dirty-dir the journal keeps them, and the log says so.
	journal := t.TempDir()
	r = start(t, "--journal-dir", journal)
	r.shadows[DemoNamespace].SetOutage(true)
	if err := r.client(t, DemoNamespace).Put(ctx, "wordle:a", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a dirty key", func() bool { return r.stats(t).Total.Dirty == 1 })
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.stderr, "kept_in=\"the journal in "+journal) || strings.Contains(r.stderr, "nowhere") {
		t.Fatalf("the log does not say the journal kept the dirty keys:\n%s", r.stderr)
	}
}

func TestStageThroughTheAdminAPI(t *testing.T) {
	r := start(t, "--stage", "handover")
	ctx := t.Context()
	cl := r.client(t, DemoNamespace)
	// A dirty key keeps the flip from happening, and the refusal says why.
	r.shadows[DemoNamespace].SetOutage(true)
	if err := cl.Put(ctx, "wordle:lost", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a dirty key", func() bool { return r.stats(t).Total.Dirty == 1 })
	var refused map[string]any
	if code := r.call(t, "PUT", "/stage", `{"stage":"live"}`, &refused); code != http.StatusConflict ||
		!strings.Contains(refused["error"].(string), `instance "demo" (alive): 1 dirty`) || refused["stage"] != "handover" {
		t.Fatalf("PUT live with a dirty key: %d %v", code, refused)
	}
	r.shadows[DemoNamespace].SetOutage(false)
	// The first repair holds the difference, the next copies it (the
	// window is 0 here).
	eventually(t, "the repair", func() bool {
		r.call(t, "POST", "/repair", "", nil)
		return r.stats(t).Total.Dirty == 0
	})

	var change map[string]any
	if code := r.call(t, "PUT", "/stage", `{"stage":"live"}`, &change); code != http.StatusOK || change["stage"] != "live" || change["generation"] != 2.0 {
		t.Fatalf("PUT live: %d %v", code, change)
	}
	if s := r.stats(t); s.Total.Stage != "live" || s.Generation != 2 {
		t.Fatalf("stats after the flip: %+v", s)
	}
	if code := r.call(t, "PUT", "/stage", `{"stage":"rampdown"}`, nil); code != http.StatusOK {
		t.Fatalf("PUT rampdown: %d", code)
	}
	// complete, one-way, needs its confirmation; the refusal says why.
	if code := r.call(t, "PUT", "/stage", `{"stage":"complete"}`, &refused); code != http.StatusBadRequest ||
		!strings.Contains(refused["error"].(string), "irreversible") || !strings.Contains(refused["error"].(string), `"confirm_irreversible": true`) {
		t.Fatalf("PUT complete without its confirmation: %d %v", code, refused)
	}
	if code := r.call(t, "PUT", "/stage", `{"stage":"complete","confirm_irreversible":true}`, nil); code != http.StatusOK {
		t.Fatalf("PUT complete: %d", code)
	}
	if code := r.call(t, "PUT", "/stage", `{"stage":"rampdown"}`, &refused); code != http.StatusConflict ||
		!strings.Contains(refused["error"].(string), "complete is one-way") {
		t.Fatalf("PUT rampdown from complete: %d %v", code, refused)
	}
	var st map[string]any
	if code := r.call(t, "GET", "/stage", "", &st); code != http.StatusOK {
		t.Fatalf("GET /stage: %d", code)
	}
	self := st["self"].(map[string]any)
	if self["stage"] != "complete" || self["generation"] != 4.0 || self["in_sync"] != true || len(st["instances"].([]any)) != 1 {
		t.Fatalf("GET /stage: %v", st)
	}
}

var promSeries = regexp.MustCompile(`\b(kvshadow_[a-z_]+)\{`)

func TestMetricsServeTheDashboardSeries(t *testing.T) {
	r := start(t, "--journal-dir", t.TempDir(), "--heartbeat-interval", "200ms")
	ctx := t.Context()
	cl := r.client(t, DemoNamespace)
	shadow := r.shadows[DemoNamespace]
	put := func(k, v string) {
		t.Helper()
		if err := cl.Put(ctx, k, []byte(v), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Copies, reads compared (the demo compares every key), a divergence.
	put("wordle:1", "a")
	put("wordle:2", "b")
	eventually(t, "copies", func() bool { return r.stats(t).Total.Queued == 0 })
	if err := shadow.Inner().Put(ctx, "wordle:2", []byte("changed behind the proxy"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"wordle:1", "wordle:2"} {
		if _, err := cl.Get(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	// The comparison suspects the difference; a verification (which a
	// repair request starts at once) confirms it once a heartbeat read
	// since shows no other instance with a copy on its way, and repairs
	// the key.
	eventually(t, "a suspicion", func() bool { return r.stats(t).Total.Comparisons["suspected"] == 1 })
	eventually(t, "a divergence", func() bool {
		if code := r.call(t, "POST", "/repair", "", nil); code != http.StatusOK {
			t.Fatalf("POST /repair: %d", code)
		}
		return r.stats(t).Total.Divergences == 1
	})
	eventually(t, "its repair", func() bool { return r.stats(t).Total.Repairs["copied"] == 1 })
	// Two failed copies leave keys dirty; a repair copies them.
	shadow.SetOutage(true)
	put("wordle:3", "c")
	put("wordle:4", "d")
	eventually(t, "dirty keys", func() bool { return r.stats(t).Total.Dirty == 2 })
	shadow.SetOutage(false)
	// The first repair holds each difference, the next copies it.
	eventually(t, "repairs", func() bool {
		if code := r.call(t, "POST", "/repair", "", nil); code != http.StatusOK {
			t.Fatalf("POST /repair: %d", code)
		}
		return r.stats(t).Total.Repairs["copied"] == 3
	})
	// Enough failures open the breaker.
	shadow.SetOutage(true)
	for i := range 8 {
		put("wordle:x"+string(rune('a'+i)), "e")
	}
	eventually(t, "the breaker open", func() bool { return r.stats(t).Total.Drops["breaker_open"] > 0 })
	// The breaker's transition is counted by the Store's event loop, which
	// may not have run yet when the first copy is refused.
	var scrape string
	eventually(t, "the breaker's transition in the scrape", func() bool {
		scrape = r.scrape(t)
		return strings.Contains(scrape, "\nkvshadow_dualwrite_breaker_transitions_total{")
	})
	raw, err := os.ReadFile("../deploy/grafana/kvshadow-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	queried := map[string]bool{}
	for _, m := range promSeries.FindAllStringSubmatch(string(raw), -1) {
		queried[m[1]] = true
	}
	if len(queried) < 15 {
		t.Fatalf("only %d series found in the dashboard", len(queried))
	}
	for name := range queried {
		if !strings.Contains(scrape, "\n"+name+"{") {
			t.Errorf("the dashboard queries %s; the scrape has no such series", name)
		}
	}
	for _, label := range []string{`kvshadow_role="primary"`, `kvshadow_role="shadow"`, `kvshadow_divergence_kind="value_mismatch"`,
		`kvshadow_drop_reason="breaker_open"`, `kvshadow_repair_outcome="copied"`, `db_system_name="cloudflare_kv"`} {
		if !strings.Contains(scrape, label) {
			t.Errorf("the scrape has no %s", label)
		}
	}
	if strings.Contains(scrape, "wordle:") {
		t.Error("the scrape carries a key")
	}
}

func errorsIs(err, target error) bool { return err != nil && errors.Is(err, target) }

func TestTeeIngestFeedsTheShadow(t *testing.T) {
	r := start(t, "--stage", "dualwrite", "--heartbeat-interval", "100ms")
	ctx := t.Context()
	origin, _, _ := strings.Cut(r.api, "/client/v4/")
	post := func(path, body string) (int, string) { return r.tee(t, path, body) }
	now := time.Now().UnixMilli()
	// The bot's binding wrote these to Workers KV itself; the proxy gets the copies.
	batch := fmt.Sprintf(`{"namespace":%q,"copies":[{"key":"wordle:tee","value":"dGVl","acked_at":%d},{"key":"wordle:gone","deleted":true,"acked_at":%d}]}`,
		DemoNamespace, now, now)
	if code, body := post(TeePath+"ingest", batch); code != http.StatusOK || !strings.Contains(body, `"copies":2`) {
		t.Fatalf("ingest: %d %s", code, body)
	}
	eventually(t, "the tee's copy in the shadow", func() bool {
		v, err := r.shadows[DemoNamespace].Inner().Get(ctx, "wordle:tee")
		return err == nil && string(v) == "tee"
	})
	if s := r.stats(t); s.Total.Unsettled == 0 {
		t.Fatalf("an ingested key is not in the settle set: %+v", s.Total)
	}
	if code, body := post(TeePath+"stage", ""); code != http.StatusOK || !strings.Contains(body, `"stage":"dualwrite"`) {
		t.Fatalf("tee stage: %d %s", code, body)
	}
	// In dualwrite the tee's reads are ignored; in shadow they are
	// compared with MongoDB, by digest.
	sum := sha256.Sum256([]byte("tee"))
	reads := fmt.Sprintf(`{"namespace":%q,"reads":[{"key":"wordle:tee","found":true,"sha256":"%x","length":3,"read_at":%d}]}`, DemoNamespace, sum, time.Now().UnixMilli())
	if code, body := post(TeePath+"ingest", reads); code != http.StatusOK || !strings.Contains(body, `"reads":0,"reads_ignored":1`) {
		t.Fatalf("reads in dualwrite: %d %s", code, body)
	}
	if code := r.call(t, "PUT", "/stage", `{"stage":"shadow"}`, nil); code != http.StatusOK {
		t.Fatalf("PUT shadow: %d", code)
	}
	if code, body := post(TeePath+"ingest", reads); code != http.StatusOK || !strings.Contains(body, `"reads":1,"reads_ignored":0`) {
		t.Fatalf("reads in shadow: %d %s", code, body)
	}
	eventually(t, "the tee's read compared", func() bool {
		s := r.stats(t).Total
		return s.TeeReads == 1 && s.Comparisons["match"] == 1
	})
	// From handover on the tee goes through the proxy.
	if code := r.call(t, "PUT", "/stage", `{"stage":"handover"}`, nil); code != http.StatusOK {
		t.Fatalf("PUT handover: %d", code)
	}
	// The keys the copies wrote are verified against the primary before
	// MongoDB may become authoritative.
	var refused map[string]any
	if code := r.call(t, "PUT", "/stage", `{"stage":"live"}`, &refused); code != http.StatusConflict ||
		!strings.Contains(fmt.Sprint(refused["error"]), "keys last written by a binding copy or reloaded from the journal, not verified yet") {
		t.Fatalf("PUT live with unverified copies: %d %v", code, refused)
	}
	var stage admin.StageView
	if code := r.call(t, "GET", "/stage", "", &stage); code != http.StatusOK || stage.Flip == nil || stage.Flip.Clear ||
		stage.Flip.To != "live" || !strings.Contains(strings.Join(stage.Flip.HeldBy, "; "), "not verified yet") {
		t.Fatalf("GET /stage in handover: %d %+v", code, stage.Flip)
	}
	eventually(t, "the flip, once the copies are verified", func() bool {
		r.call(t, "POST", "/repair", "", nil)
		return r.call(t, "PUT", "/stage", `{"stage":"live"}`, nil) == http.StatusOK
	})
	// A copy that arrives after the flip is late: taken, counted, and
	// its key kept for verification.
	if code, body := post(TeePath+"ingest", batch); code != http.StatusOK {
		t.Fatalf("ingest in live: %d %s", code, body)
	}
	if s := r.stats(t).Total; s.LateCopies["applied"]+s.LateCopies["conflict"]+s.LateCopies["superseded"]+s.LateCopies["held"] != 2 || s.Fence.IngestUnverified != 2 {
		t.Fatalf("late copies: %v, fence %+v", s.LateCopies, s.Fence)
	}
	// Without the clients' token: refused.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, origin+TeePath+"ingest", strings.NewReader(batch))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("ingest without a token: %d", resp.StatusCode)
	}
}

func TestJournalKeepsTheSettleSetAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	r := start(t, "--journal-dir", dir)
	cl := r.client(t, DemoNamespace)
	r.shadows[DemoNamespace].SetOutage(true)
	for _, k := range []string{"wordle:a", "wordle:b", "wordle:c"} {
		if err := cl.Put(t.Context(), k, []byte("v"), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "three dirty keys", func() bool { return r.stats(t).Total.Dirty == 3 })
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	// The same journal, a new process: the keys are back in the set, to be
	// settled (a second process on the journal would be refused: bbolt's lock).
	again := start(t, "--journal-dir", dir)
	s := again.stats(t).Total
	if !s.Journal || s.Loaded != 3 {
		t.Fatalf("after the restart: journal %v, loaded %d: %+v", s.Journal, s.Loaded, s)
	}
}

// scrape reads /metrics with the admin token, as Prometheus does.
func (r *running) scrape(t *testing.T) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", r.admin+"metrics", nil)
	req.Header.Set("Authorization", "Bearer "+r.c.secrets.admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	return string(body)
}

// gauge is the value of an unlabelled series of the scrape, besides the
// scope labels the exporter adds.
func gauge(scrape, name string) string {
	m := regexp.MustCompile(`(?m)^` + name + `\{[^}]*\} (\S+)$`).FindStringSubmatch(scrape)
	if m == nil {
		return "absent"
	}
	return m[1]
}

// The instance's gauges say what /readyz and /stage say: ready or not, and
// which generation it runs against the document's.
func TestInstanceGauges(t *testing.T) {
	r := start(t, "--probe-interval", "20ms")
	scrape := r.scrape(t)
	if g, d := gauge(scrape, "kvshadow_control_generation"), gauge(scrape, "kvshadow_control_document_generation"); g != "1" || d != "1" {
		t.Errorf("generation %s, document generation %s, want 1 and 1", g, d)
	}
	if v := gauge(scrape, "kvshadow_service_ready"); v != "1" {
		t.Errorf("ready = %s at start, want 1", v)
	}
	if code := r.call(t, "PUT", "/stage", `{"stage":"dualwrite"}`, nil); code != http.StatusOK {
		t.Fatalf("PUT dualwrite: %d", code)
	}
	eventually(t, "generation 2", func() bool { return gauge(r.scrape(t), "kvshadow_control_generation") == "2" })
	r.primary[DemoNamespace].SetOutage(true)
	eventually(t, "ready 0", func() bool { return gauge(r.scrape(t), "kvshadow_service_ready") == "0" })
	r.primary[DemoNamespace].SetOutage(false)
	eventually(t, "ready 1 again", func() bool { return gauge(r.scrape(t), "kvshadow_service_ready") == "1" })
}

func TestReadyzFollowsTheAuthoritativeStore(t *testing.T) {
	r := start(t, "--probe-interval", "20ms")
	ready := func() (int, []any) {
		var v map[string]any
		code := r.call(t, "GET", "/readyz", "", &v)
		reasons, _ := v["reasons"].([]any)
		return code, reasons
	}
	if code, reasons := ready(); code != http.StatusOK {
		t.Fatalf("readyz at start: %d %v", code, reasons)
	}
	// The primary is authoritative in shadow: its outage makes the
	// instance unready, with the reason.
	r.primary[DemoNamespace].SetOutage(true)
	eventually(t, "readyz 503", func() bool {
		code, reasons := ready()
		return code == http.StatusServiceUnavailable && len(reasons) == 1 &&
			strings.Contains(reasons[0].(string), "the authoritative store (primary) of namespace demo-kv does not answer")
	})
	// A probe sends no token: it learns why in general words only.
	res, err := http.Get(r.admin + "readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || strings.Contains(string(body), DemoNamespace) || !strings.Contains(string(body), "an authoritative store does not answer") {
		t.Errorf("readyz without a token: %d %s, want 503 with the general reason and no namespace ID", res.StatusCode, body)
	}
	r.primary[DemoNamespace].SetOutage(false)
	eventually(t, "readyz 200 again", func() bool { code, _ := ready(); return code == http.StatusOK })
	// In live MongoDB is authoritative: the shadow's outage counts now,
	// the primary's no longer does.
	for _, next := range []string{"handover", "live"} {
		if code := r.call(t, "PUT", "/stage", `{"stage":"`+next+`"}`, nil); code != http.StatusOK {
			t.Fatalf("PUT %s: %d", next, code)
		}
	}
	r.primary[DemoNamespace].SetOutage(true)
	r.shadows[DemoNamespace].SetOutage(true)
	eventually(t, "readyz 503 for the shadow", func() bool {
		code, reasons := ready()
		return code == http.StatusServiceUnavailable && len(reasons) == 1 && strings.Contains(reasons[0].(string), "(shadow)")
	})
}

func TestDrainingIsNotReady(t *testing.T) {
	r := start(t, "--shutdown-delay", "1s")
	stopped := make(chan error, 1)
	go func() { stopped <- r.stop() }()
	// During the delay the listeners still answer: /readyz says why the
	// load balancer should send nothing more.
	eventually(t, "readyz 503 while draining", func() bool {
		var v map[string]any
		code, err := r.adminClient().Do(context.Background(), "GET", "readyz", "", &v)
		if err != nil && code == 0 {
			t.Fatalf("the admin API stopped answering before the delay ended: %v", err)
		}
		reasons, _ := v["reasons"].([]any)
		return code == http.StatusServiceUnavailable && len(reasons) == 1 && strings.Contains(reasons[0].(string), "draining")
	})
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}
