package workers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/service"
	"github.com/kvshadow/kvshadow/service/admin"
	"github.com/kvshadow/kvshadow/tests/mongotest"
)

// The corners of the flip in tee mode (issue 30), each in workerd through
// miniflare with several bot isolates, the bridge Worker as the proxy's
// primary and the embedded MongoDB-compatible server as its shadow. Each
// counts the plain writes and read-modify-write increments the bots were
// told succeeded, and asserts that none is lost and that every refusal
// reached the bot with its reason.

// link is the Workers' way to kvshadow-proxy: a reverse proxy over the
// proxy replicas, taken in turn, that can be cut (every request's
// connection closed unanswered: a proxy down or unreachable).
type link struct {
	URL     string
	down    atomic.Bool
	next    atomic.Uint64
	mu      sync.Mutex
	targets []*url.URL
}

func newLink(t *testing.T) *link {
	l := &link{}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		l.mu.Lock()
		u := l.targets[int(l.next.Add(1))%len(l.targets)]
		l.mu.Unlock()
		r.SetURL(u)
		r.Out.Host = r.In.Host
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.down.Load() {
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				_ = c.Close()
			}
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	l.URL = srv.URL
	return l
}

func (l *link) add(t *testing.T, api string) {
	u, err := url.Parse(api)
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.targets = append(l.targets, &url.URL{Scheme: u.Scheme, Host: u.Host})
	l.mu.Unlock()
}

// lagger stands between kvshadow-proxy and the bridge: while set, each
// write to Workers KV waits that long first, so that Workers KV lags
// MongoDB in live (the proxy's copies to it are asynchronous).
type lagger struct {
	URL   string
	delay atomic.Int64
}

func newLagger(t *testing.T, bridgeURL string) *lagger {
	u, err := url.Parse(bridgeURL)
	if err != nil {
		t.Fatal(err)
	}
	lg := &lagger{}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := time.Duration(lg.delay.Load()); d > 0 && r.Method != http.MethodGet {
			time.Sleep(d)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	lg.URL = srv.URL + u.Path
	return lg
}

// rig is one corner's world.
type rig struct {
	t               *testing.T
	b               *bots
	adm             *admin.Client
	link            *link
	lag             *lagger
	primary, shadow kv.Store
	env             map[string]string
	refusals        []string
	flips           []string // each flip's stage and wait, in order
	writes          int
	lostN           int
}

type rigConfig struct {
	bots    int
	botVars map[string]map[string]string
	// stageTTL is the bots' stageTtlMs: empty for the tee's default (30 s).
	stageTTL string
	// flags go to every replica; replicas adds each replica's own (one
	// replica when empty).
	flags    []string
	replicas [][]string
}

// The proxy's settings of the shortened runs: a lease of 1 s, an
// invocation of at most 2 s, so a fence of 3 s.
var shortFence = []string{"--fence-interval", "3s", "--tee-lease", "1s", "--tee-invocation", "2s"}

// fenceFlags are the proxy's settings of a corner: short, or with
// KVSHADOW_CORNERS=defaults the proxy's own (a lease of 30 s, a fence of
// 65 s: each corner then takes minutes, so CI runs the short ones), and
// the lease they make.
func fenceFlags(t *testing.T, short []string, shortLease time.Duration) ([]string, time.Duration) {
	if os.Getenv("KVSHADOW_CORNERS") == "defaults" {
		t.Log("the proxy's default fence, lease and invocation")
		return nil, service.DefaultTeeLease
	}
	return short, shortLease
}

func newRig(t *testing.T, cfg rigConfig) *rig {
	lk := newLink(t)
	vars, _ := json.Marshal(cfg.botVars)
	w := newFlipWorld(t, "corner", lk.URL, "KVSHADOW_STAGE_TTL_MS="+cfg.stageTTL, "KVSHADOW_STAGE_TIMEOUT_MS=",
		"KVSHADOW_BOTS="+strconv.Itoa(cfg.bots), "KVSHADOW_BOT_VARS="+string(vars))
	lag := newLagger(t, w.bridge.URL)
	env := w.env
	env["CLOUDFLARE_BASE_URL"] = lag.URL
	common := append([]string{"--stage", "shadow", "--consistency-window", "0",
		"--poll-interval", "100ms", "--heartbeat-interval", "100ms", "--repair-interval", "250ms"}, cfg.flags...)
	replicas := cfg.replicas
	if len(replicas) == 0 {
		replicas = [][]string{nil}
	}
	var adminURL string
	for i, own := range replicas {
		api, a := startProxy(t, env, append(append([]string{"--instance", fmt.Sprintf("replica-%d", i+1)}, common...), own...)...)
		lk.add(t, api)
		if i == 0 {
			adminURL = a
		}
	}
	return &rig{
		t: t, b: &bots{node: w.node, acked: map[string]string{}}, adm: &admin.Client{URL: adminURL, Token: w.adminToken},
		link: lk, lag: lag, env: env,
		primary: w.bridge.store(t),
		shadow:  shadowStore(t, w.mongo, w.db),
	}
}

// put and incr run one operation; a refusal is recorded with what the bot
// was told, and returned.
func (r *rig) put(bot, key, value string) error {
	err := r.b.put(bot, key, value, "")
	r.note(err)
	if err == nil {
		r.b.mu.Lock()
		r.writes++
		r.b.mu.Unlock()
	}
	return err
}

func (r *rig) incr(bot string) error {
	err := r.b.incr(bot)
	r.note(err)
	return err
}

func (r *rig) get(bot, key string) (string, error) {
	r.b.mu.Lock()
	a, err := r.b.do(map[string]any{"bot": bot, "op": "get", "key": key})
	r.b.mu.Unlock()
	r.note(err)
	return string(a.Value), err
}

func (r *rig) note(err error) {
	if err == nil {
		return
	}
	r.b.mu.Lock()
	r.refusals = append(r.refusals, err.Error())
	r.b.mu.Unlock()
}

// must fails the test on a refusal the corner does not expect.
func (r *rig) must(err error) {
	r.t.Helper()
	if err != nil {
		r.t.Fatal(err)
	}
}

// refused asserts that err is a refusal whose message carries why.
func (r *rig) refused(err error, why string) {
	r.t.Helper()
	if err == nil {
		r.t.Fatalf("the call succeeded; want a refusal saying %q", why)
	}
	if !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "503") {
		r.t.Fatalf("refused with %q; want a 503 saying %q", err, why)
	}
}

// refusedCalls asserts that bot's read of key and its increment are both
// refused saying why: nothing is served from its binding.
func (r *rig) refusedCalls(bot, key, why string) {
	r.t.Helper()
	v, err := r.get(bot, key)
	if err == nil {
		r.t.Fatalf("%s read %q from the binding; want a refusal saying %q", bot, v, why)
	}
	r.refused(err, why)
	r.refused(r.incr(bot), why)
}

// flip moves the stage, asking again while it is refused, and notes for
// the report how long it waited and the last reason it was held.
func (r *rig) flip(to string) {
	r.t.Helper()
	start := time.Now()
	var why string
	ok := until(2*time.Minute, func() bool {
		var out map[string]any
		body := `{"stage":"` + to + `"}`
		if to == "complete" {
			body = `{"stage":"complete","confirm_irreversible":true}`
		}
		code, err := r.adm.Do(context.Background(), "PUT", "stage", body, &out)
		if code == http.StatusOK && out["applied"] == true {
			return true
		}
		if e, ok := out["error"].(string); ok {
			why = heldBy(why, e)
			if strings.Contains(e, "irreversible") {
				r.t.Fatal(e)
			}
		} else {
			why = fmt.Sprintf("%d %v %v", code, out, err)
		}
		return false
	})
	if !ok {
		r.t.Fatalf("PUT /stage %s never applied: last %s", to, why)
	}
	r.flips = append(r.flips, to+": "+waitedWhy(time.Since(start), why))
}

// traffic runs bots' puts and increments in turn until stop is closed;
// refusals are recorded and let through when they carry allowed.
func (r *rig) traffic(names []string, allowed string) (stop func()) {
	done := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			bot := names[i%len(names)]
			err := r.put(bot, fmt.Sprintf("%s:k%d", bot, i%4), fmt.Sprintf("%s write %d", bot, i))
			if err == nil {
				err = r.incr(bot)
			}
			if err != nil && (allowed == "" || !strings.Contains(err.Error(), allowed)) {
				errs <- err
				return
			}
			if err != nil {
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	return func() {
		r.t.Helper()
		close(done)
		if err := <-errs; err != nil {
			r.t.Fatalf("traffic: %v", err)
		}
	}
}

// lost waits until every store holds what the bots were told was written
// last, key by key, and fails with what it does not; and checks that each
// acknowledged increment read the one before it.
func (r *rig) lost(stores ...string) (n int) {
	r.t.Helper()
	byName := map[string]kv.Store{"Workers KV": r.primary, "MongoDB": r.shadow}
	var missing []string
	until(30*time.Second, func() bool {
		missing = missing[:0]
		for _, name := range stores {
			got := everything(r.t, byName[name])
			for key, want := range r.b.acked {
				if e, ok := got[key]; !ok || !bytes.Equal(e.Value, []byte(want)) {
					missing = append(missing, fmt.Sprintf("%s: %s holds %q, the bot was told %q", key, name, e.Value, want))
				}
			}
		}
		return len(missing) == 0
	})
	if len(missing) > 0 {
		r.t.Errorf("acknowledged writes lost:\n%s", strings.Join(missing, "\n"))
	}
	lostIncrs := 0
	for i := 1; i < len(r.b.incrs); i++ {
		if r.b.incrs[i] != r.b.incrs[i-1]+1 {
			lostIncrs++
		}
	}
	if len(r.b.incrs) > 0 && r.b.incrs[0] != 1 {
		lostIncrs++
	}
	if lostIncrs > 0 {
		r.t.Errorf("%d acknowledged increments lost: each must read the one before it (%v)", lostIncrs, r.b.incrs)
	}
	r.lostN = len(missing) + lostIncrs
	return r.lostN
}

// report logs the corner's figures.
func (r *rig) report(corner string) {
	r.t.Helper()
	kinds := map[string]int{}
	for _, e := range r.refusals {
		kind := e
		if _, after, ok := strings.Cut(e, "503 "); ok {
			kind, _, _ = strings.Cut(after, ",")
		}
		kinds[kind]++
	}
	r.t.Logf("%s: %d plain writes and %d increments acknowledged, %d lost; refused %d: %v; flips: %v",
		corner, r.writes, len(r.b.incrs), r.lostN, len(r.refusals), kinds, strings.Join(r.flips, "; "))
}

// heldBy adds to seen the kinds of hold a refused flip names.
func heldBy(seen, refusal string) string {
	for _, k := range []struct{ says, kind string }{
		{"the fence waits", "the quiet interval"}, {"full comparison", "the full comparison"},
		{"not verified", "copies' keys not verified"}, {"runs generation", "a replica's lagging generation"},
		{"not drained", "lanes"}, {"dirty", "dirty keys"}, {"__kvshadow:stage", "the stage key read back"},
	} {
		if strings.Contains(refusal, k.says) && !strings.Contains(seen, k.kind) {
			if seen != "" {
				seen += ", "
			}
			seen += k.kind
		}
	}
	return seen
}

// waitedWhy renders a flip's wait.
func waitedWhy(d time.Duration, why string) string {
	if why == "" {
		why = "nothing"
	}
	return fmt.Sprintf("%s (held by %s)", d.Round(100*time.Millisecond), why)
}

// TestCornerCutOffRightAfterHandover: an isolate writes its binding on its
// lease right after the handover while the Workers cannot reach the proxy
// for 6 s: its copies never arrive in time. The handover's full
// comparison, run once no isolate can still write its binding, finds
// those writes in Workers KV and repairs MongoDB before the flip goes; the
// other bots' writes past their lease are refused with the reason. The
// tee keeps its own stageTtlMs default; the proxy's lease is 3 s.
func TestCornerCutOffRightAfterHandover(t *testing.T) {
	flags, lease := fenceFlags(t, []string{"--fence-interval", "5s", "--tee-lease", "3s", "--tee-invocation", "2s"}, 3*time.Second)
	r := newRig(t, rigConfig{bots: 2, flags: flags})
	r.must(r.put("bot1", "a:k", "bot1 in shadow"))
	r.must(r.incr("bot1"))
	r.must(r.incr("bot2"))
	time.Sleep(lease + 100*time.Millisecond) // the leases end; bot1 reads the stage again next
	r.must(r.incr("bot1"))                   // shadow: its binding, a lease from now
	r.link.down.Store(true)
	cutAt := time.Now()
	r.flip("handover")
	// Still on its lease: the binding, and copies that cannot be sent.
	r.must(r.put("bot1", "cut:k", "written in handover, its copy cut off"))
	r.must(r.incr("bot1"))
	r.must(r.incr("bot1"))
	go func() {
		time.Sleep(time.Until(cutAt.Add(6 * time.Second)))
		r.link.down.Store(false)
	}()
	// bot2, past its lease, is refused until the link is back.
	stop := r.traffic([]string{"bot2"}, "kvshadow-proxy unreachable")
	r.flip("live")
	for !time.Now().After(cutAt.Add(6500 * time.Millisecond)) {
		time.Sleep(100 * time.Millisecond)
	}
	r.must(r.incr("bot1"))
	r.must(r.put("bot1", "cut:k", "written in live"))
	r.must(r.incr("bot2"))
	stop()
	r.lost("MongoDB", "Workers KV")
	if len(r.refusals) == 0 && lease < 6*time.Second {
		t.Fatal("no call was refused while the proxy was cut off past the leases")
	}
	for _, e := range r.refusals {
		r.refused(fmt.Errorf("%s", e), "kvshadow-proxy unreachable")
	}
	r.report("cut off after handover")
}

// TestCornerFenceShorterThanTheLease: a fence shorter than the lease is
// refused at start, naming both; and with the lease set by the proxy (1 s)
// the isolates that keep the tee's own 30 s lose nothing across the flip,
// under read-modify-write traffic, one of them idle since shadow.
func TestCornerFenceShorterThanTheLease(t *testing.T) {
	mongo := mongotest.New(t)
	env := map[string]string{
		"CLOUDFLARE_ACCOUNT_ID": "a", "CLOUDFLARE_KV_NAMESPACE_ID": "n", "CLOUDFLARE_API_TOKEN": "t",
		"MONGODB_URI": mongo.URI(), "KVSHADOW_TOKEN": "client", "KVSHADOW_ADMIN_TOKEN": "admin",
	}
	if _, err := parseProxy([]string{"--fence-interval", "3s"}, env); err == nil ||
		!strings.Contains(err.Error(), "--fence-interval 3s is shorter than --tee-lease 30s + --tee-invocation 31s") {
		t.Fatalf("a fence of 3 s beside the default lease: %v", err)
	}

	// bot1 and bot3 keep the tee's 30 s; bot2 has a lease of its own of
	// 1 s, and writes all along. bot1 and bot3 learn the stage just before
	// the handover and stay idle across it: were their 30 s trusted, they
	// would write their binding in live beside bot2's writes through the
	// proxy.
	flags, _ := fenceFlags(t, shortFence, time.Second)
	r := newRig(t, rigConfig{bots: 3, botVars: map[string]map[string]string{"bot2": {"KVSHADOW_STAGE_TTL_MS": "1000"}}, flags: flags})
	stop := r.traffic([]string{"bot2"}, "")
	time.Sleep(500 * time.Millisecond)
	r.must(r.incr("bot1"))
	r.must(r.incr("bot3"))
	r.flip("handover")
	r.flip("live")
	idle := r.traffic([]string{"bot1", "bot3"}, "")
	time.Sleep(3 * time.Second)
	idle()
	stop()
	r.lost("MongoDB", "Workers KV")
	if len(r.refusals) != 0 {
		t.Fatalf("refused: %v", r.refusals)
	}
	r.report("fence shorter than the lease")
}

// TestCornerIdleIsolateLosesTheProxyInLive: an isolate idle since shadow
// (last stage known: its binding) loses the proxy in live while Workers KV
// lags MongoDB by 2 s: its calls are refused with the reason, never served
// from the binding; once the link is back, its increment reads MongoDB.
func TestCornerIdleIsolateLosesTheProxyInLive(t *testing.T) {
	flags, _ := fenceFlags(t, shortFence, time.Second)
	r := newRig(t, rigConfig{bots: 3, flags: flags})
	r.must(r.incr("bot3"))
	r.must(r.incr("bot1"))
	r.flip("handover")
	r.flip("live")
	r.must(r.incr("bot1"))
	r.lag.delay.Store(int64(2 * time.Second))
	r.must(r.incr("bot1")) // MongoDB has it; Workers KV in 2 s
	r.link.down.Store(true)
	r.refusedCalls("bot3", counterKey, "kvshadow-proxy unreachable")
	r.link.down.Store(false)
	r.must(r.incr("bot3"))
	r.must(r.incr("bot1"))
	r.lag.delay.Store(0)
	r.lost("MongoDB", "Workers KV")
	r.report("idle isolate loses the proxy in live")
}

// TestCornerFreshIsolateAfterTheFlip: in complete, a fresh isolate whose
// proxy is stopped, and one whose token is wrong, serve nothing from the
// binding (frozen at the flip): every call is refused with the proxy's
// reason, and each reason is logged once by its isolate.
func TestCornerFreshIsolateAfterTheFlip(t *testing.T) {
	flags, _ := fenceFlags(t, shortFence, time.Second)
	r := newRig(t, rigConfig{bots: 5, botVars: map[string]map[string]string{"bot5": {"KVSHADOW_TOKEN": "not-the-token"}}, flags: flags})
	r.must(r.put("bot1", "fresh:k", "in shadow"))
	r.must(r.incr("bot1"))
	for _, to := range []string{"handover", "live", "rampdown", "complete"} {
		r.flip(to)
		r.must(r.incr("bot1"))
	}
	r.must(r.put("bot1", "fresh:k", "in complete"))
	for range 2 {
		r.refusedCalls("bot5", "fresh:k", "kvshadow-proxy refused the token (401)")
	}
	r.link.down.Store(true)
	for range 2 {
		r.refusedCalls("bot4", "fresh:k", "kvshadow-proxy unreachable")
	}
	r.link.down.Store(false)
	r.must(r.incr("bot4"))
	r.must(r.incr("bot1"))
	r.lost("MongoDB") // Workers KV is no longer written in complete
	logged := map[string]int{}
	for _, l := range r.b.logs {
		if strings.Contains(l, "kvshadow_tee_stage_unknown") {
			switch {
			case strings.Contains(l, "401"):
				logged["401"]++
			case strings.Contains(l, "unreachable"):
				logged["unreachable"]++
			}
		}
	}
	if logged["401"] != 1 || logged["unreachable"] != 1 {
		t.Fatalf("the refusals were logged %v times; want each reason once: %q", logged, r.b.logs)
	}
	r.report("fresh isolate after the flip")
}

// TestCornerFirstStartInLive: the proxy's first instance starts in live
// (an empty control board and --stage live: a migration finished by other
// means, or a board lost), so no way into handover ever wrote
// __kvshadow:stage. A fresh isolate that cannot reach the proxy must still
// serve nothing from its binding, which is no longer authoritative: the
// proxy writes the key when it starts past shadow.
func TestCornerFirstStartInLive(t *testing.T) {
	flags, _ := fenceFlags(t, shortFence, time.Second)
	r := newRig(t, rigConfig{bots: 2, flags: append(slices.Clip(flags), "--stage", "live", "--new-pairing")})
	r.must(r.put("bot1", "live:k", "written in live"))
	r.must(r.incr("bot1"))
	r.link.down.Store(true)
	r.refusedCalls("bot2", "live:k", "kvshadow-proxy unreachable")
	r.link.down.Store(false)
	r.must(r.incr("bot2"))
	r.must(r.incr("bot1"))
	r.lost("MongoDB")
	r.report("first start in live")
}

// TestCornerTwoReplicasOneLagging: two proxy replicas behind one URL, the
// second following the stage document only every 1.5 s, so that its stage
// answers lag the first's; the flip under read-modify-write traffic from
// three isolates loses nothing.
func TestCornerTwoReplicasOneLagging(t *testing.T) {
	flags, _ := fenceFlags(t, shortFence, time.Second)
	r := newRig(t, rigConfig{bots: 3, flags: flags, replicas: [][]string{nil, {"--poll-interval", "1500ms"}}})
	r.must(r.incr("bot3"))
	stop := r.traffic([]string{"bot1", "bot2", "bot3"}, "")
	time.Sleep(500 * time.Millisecond)
	for _, to := range []string{"handover", "live", "handover", "live"} {
		r.flip(to)
		time.Sleep(300 * time.Millisecond)
	}
	stop()
	r.lost("MongoDB", "Workers KV")
	if len(r.refusals) != 0 {
		t.Fatalf("refused: %v", r.refusals)
	}
	r.report("two replicas, one lagging")
}

// parseProxy parses kvshadow-proxy's command line over env.
func parseProxy(args []string, env map[string]string) (*service.Config, error) {
	return service.Parse(args, func(k string) string { return env[k] })
}

// TestCornerAClientTampersWithTheStageKey: in handover, a client with the
// clients' token tries to delete or rewrite __kvshadow:stage through the
// proxy's front (each way issue 41 measured: DELETE, PUT "shadow" in another
// encoding, both bulk deletes, a bulk write, a multipart write) and a copy
// of it through the tee's endpoint: each is refused with 400, and the key the
// proxy wrote through the bridge stays. After the flip an isolate cut off
// from the proxy reads it from its binding and refuses its calls: nothing
// acknowledged is lost.
func TestCornerAClientTampersWithTheStageKey(t *testing.T) {
	flags, lease := fenceFlags(t, shortFence, time.Second)
	r := newRig(t, rigConfig{bots: 2, flags: flags})
	r.must(r.put("bot1", "tamper:k", "in shadow"))
	r.must(r.incr("bot1"))
	r.must(r.incr("bot2"))
	r.flip("handover")
	const stageKey = "__kvshadow:stage"
	ns := r.link.URL + "/client/v4/accounts/" + r.env["CLOUDFLARE_ACCOUNT_ID"] + "/storage/kv/namespaces/" + r.env["CLOUDFLARE_KV_NAMESPACE_ID"] + "/"
	form := "--b\r\nContent-Disposition: form-data; name=\"value\"\r\n\r\nshadow\r\n--b--\r\n"
	for _, c := range []struct{ method, url, ctype, body string }{
		{"DELETE", ns + "values/" + stageKey, "", ""},
		{"PUT", ns + "values/%5F%5Fkvshadow%3astage", "application/octet-stream", "shadow"},
		{"PUT", ns + "values/__kvshadow%3Astage", "multipart/form-data; boundary=b", form},
		{"DELETE", ns + "bulk", "application/json", `["` + stageKey + `"]`},
		{"POST", ns + "bulk/delete", "application/json", `["` + stageKey + `"]`},
		{"PUT", ns + "bulk", "application/json", `[{"key":"` + stageKey + `","value":"off"}]`},
		{"POST", r.link.URL + service.TeePath + "ingest", "application/json",
			fmt.Sprintf(`{"copies":[{"key":%q,"deleted":true,"acked_at":%d}]}`, stageKey, time.Now().UnixMilli())},
	} {
		req, _ := http.NewRequest(c.method, c.url, strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+r.env["KVSHADOW_TOKEN"])
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s %s with the clients' token: %d, want 400", c.method, c.url, resp.StatusCode)
		}
	}
	if v, err := r.primary.Get(t.Context(), stageKey); err != nil || string(v) != "handover" {
		t.Fatalf("Workers KV's %s after the clients' calls: %q, %v", stageKey, v, err)
	}
	r.must(r.incr("bot1"))
	r.flip("live")
	r.must(r.incr("bot1"))
	time.Sleep(lease + 100*time.Millisecond) // bot2's lease ends: it asks the proxy next
	r.link.down.Store(true)
	r.refusedCalls("bot2", "tamper:k", "kvshadow-proxy unreachable")
	r.link.down.Store(false)
	r.must(r.incr("bot2"))
	r.must(r.put("bot1", "tamper:k", "in live"))
	r.lost("MongoDB", "Workers KV")
	r.report("a client tampers with the stage key")
}

// TestCornerWrongToken: a bot deployed with a token that is not the
// proxy's clients' token. In shadow its writes are served by the binding
// and every copy is refused: the proxy counts them (GET /stats and
// kvshadow_ingest_refused_total, reason unauthorized), not only the
// Worker's log. From the handover on, an isolate that routes through the
// proxy when its token stops being the proxy's (the proxy restarted with
// another) is told the proxy's own reason, a 401, not Cloudflare's 403
// "Authentication error".
func TestCornerWrongToken(t *testing.T) {
	flags, _ := fenceFlags(t, shortFence, time.Second)
	r := newRig(t, rigConfig{bots: 2, botVars: map[string]map[string]string{"bot2": {"KVSHADOW_TOKEN": "not-the-token"}}, flags: flags})
	r.must(r.put("bot2", "wrong:k", "copy refused"))
	var st admin.StatsView
	if !until(30*time.Second, func() bool {
		st, _ = r.adm.Stats(context.Background())
		return st.Total.IngestRefused["unauthorized"] > 0
	}) {
		t.Fatalf("the proxy counted no refused copy: ingest_refused %v", st.Total.IngestRefused)
	}
	req, _ := http.NewRequest("GET", strings.TrimSuffix(r.adm.URL, "/")+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+r.adm.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if code := resp.StatusCode; err != nil || code != http.StatusOK || !regexp.MustCompile(`kvshadow_ingest_refused_total\{[^}]*kvshadow_refusal_reason="unauthorized"[^}]*\} [1-9]`).Match(metrics) {
		t.Fatalf("GET /metrics: %d %v; no refused copy counted:\n%s", code, err, metrics)
	}

	r.flip("handover")
	r.must(r.put("bot1", "wrong:k", "through the proxy"))
	env := maps.Clone(r.env)
	env["KVSHADOW_TOKEN"] = newToken()
	api, _ := startProxy(t, env, "--instance", "replica-2", "--stage", "shadow", "--consistency-window", "0", "--poll-interval", "100ms")
	r.link.mu.Lock()
	r.link.targets = nil
	r.link.mu.Unlock()
	r.link.add(t, api)
	const why = "401 kvshadow-proxy refused the token: it is not the proxy's clients' token (KVSHADOW_TOKEN)"
	for _, call := range []func() error{
		func() error { _, err := r.get("bot1", "wrong:k"); return err },
		func() error { return r.put("bot1", "wrong:k", "refused") },
	} {
		if err := call(); err == nil || !strings.Contains(err.Error(), why) {
			t.Fatalf("bot1 with a token the proxy no longer takes: %v; want %q", err, why)
		}
	}
	r.report("wrong token")
}

// TestCornerStageKeyDeletedAroundTheProxy (issue 41): the bot's own code
// deletes __kvshadow:stage through its binding in handover, once the fence
// is clear. The proxy reads the key back (every repair interval, and before
// the flip): it writes it again, counts it, and the fence starts again, so
// the flip waits. After the flip an isolate idle since shadow, cut off from
// the proxy, finds the key and refuses; the key deleted again in live, that
// isolate (it saw the handover) still refuses, and a fresh isolate refuses
// once the proxy has written the key again. No acknowledged write is lost.
func TestCornerStageKeyDeletedAroundTheProxy(t *testing.T) {
	flags, _ := fenceFlags(t, shortFence, time.Second)
	r := newRig(t, rigConfig{bots: 3, flags: append(slices.Clip(flags), "--repair-interval", "2s")})
	ctx := context.Background()
	r.must(r.put("bot1", "tamper:k", "in shadow"))
	r.must(r.incr("bot1"))
	r.must(r.incr("bot2")) // bot2's last answer: binding
	r.flip("handover")
	if !until(time.Minute, func() bool {
		var st admin.StageView
		_, err := r.adm.Do(ctx, "GET", "stage", "", &st)
		return err == nil && st.Flip != nil && st.Flip.Clear
	}) {
		t.Fatal("the fence never cleared in handover")
	}
	stageKey := func() (k struct {
		Found    string `json:"found"`
		Rewrites int    `json:"rewrites"`
	}) {
		var st struct {
			Total struct {
				StageKey struct {
					Found    string `json:"found"`
					Rewrites int    `json:"rewrites"`
				} `json:"stage_key"`
			} `json:"total"`
		}
		if _, err := r.adm.Do(ctx, "GET", "stats", "", &st); err != nil {
			t.Fatal(err)
		}
		k.Found, k.Rewrites = st.Total.StageKey.Found, st.Total.StageKey.Rewrites
		return k
	}
	deleteKey := func() {
		r.b.mu.Lock()
		defer r.b.mu.Unlock()
		if _, err := r.b.do(map[string]any{"bot": "bot1", "op": "binding-delete", "key": kv.ReservedPrefix + "stage"}); err != nil {
			t.Fatal(err)
		}
	}
	deleteKey()
	r.flip("live")
	if k := stageKey(); k.Rewrites != 1 || k.Found != "handover" {
		t.Errorf("after the flip the stage key is %+v; want read back as written after 1 rewrite", k)
	}
	if !strings.Contains(r.flips[1], "the stage key") && !strings.Contains(r.flips[1], "the quiet interval") {
		t.Errorf("the flip after the key was deleted: %s; want it held by the key or the fence it restarted", r.flips[1])
	}

	// A write served from the binding now is acknowledged and lost:
	// counted, and found again by lost below.
	served := 0
	cutOff := func(bot, value string) {
		t.Helper()
		r.link.down.Store(true)
		defer r.link.down.Store(false)
		if err := r.put(bot, "tamper:cut", value); err == nil {
			served++
		} else {
			r.refused(err, "kvshadow-proxy unreachable")
		}
	}
	cutOff("bot2", "bot2, cut off in live")
	deleteKey() // again, in live
	cutOff("bot2", "bot2, cut off in live, the key gone")
	if !until(time.Minute, func() bool { k := stageKey(); return k.Rewrites == 2 && k.Found == "handover" }) {
		t.Errorf("the key deleted in live was not written again: %+v", stageKey())
	}
	cutOff("bot3", "bot3, fresh, cut off")
	r.must(r.incr("bot3"))
	r.must(r.incr("bot2"))
	r.must(r.incr("bot1"))
	r.lost("MongoDB", "Workers KV")
	r.report("stage key deleted around the proxy")
	if served > 0 {
		t.Errorf("%d writes of isolates cut off from the proxy were served from the binding after the flip", served)
	}
}
