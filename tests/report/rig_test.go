package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/internal/report/cli"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
	"github.com/kvshadow/kvshadow/tests/mongotest"
)

// srv is the MongoDB-compatible server of the package: an embedded
// FerretDB, or MONGODB_URI's server. Each test works in its own database.
var srv *mongotest.Server

func TestMain(m *testing.M) { mongotest.Main(m, &srv) }

const (
	account   = "0123456789abcdef0123456789abcdef"
	namespace = "fedcba9876543210fedcba9876543210"
	token     = "integration-token"
)

// rig is one migration as shadow-report meets it: a Workers KV namespace
// served by the REST API server (over memory, on a clock frozen at the real
// time so no primary key expires during a test) and reached through the
// real Workers KV client, and a MongoDB database reached through the real
// driver. Seeding goes through the same clients.
type rig struct {
	clk       *clock.Fake
	kvServer  *kvapi.Server
	primary   *cfkv.Store
	shadow    *mongokv.Store
	env       map[string]string
	bulkGets  atomic.Int64
	cancelMu  sync.Mutex
	cancelAt  int64 // cancel the run after this many bulk gets
	cancelRun context.CancelFunc
	bulkDelay atomic.Int64 // nanoseconds each bulk get waits before it is served
}

func newRig(t testing.TB) *rig {
	t.Helper()
	r := &rig{clk: clock.NewFake(time.Now().UTC().Truncate(time.Second))}
	mem := memory.New(memory.Config{Clock: r.clk})
	var err error
	r.kvServer, err = kvapi.New(kvapi.Config{
		Namespaces: map[string]kv.Store{namespace: mem}, AccountID: account, Token: token, Clock: r.clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/bulk/get") {
			n := r.bulkGets.Add(1)
			r.cancelMu.Lock()
			if r.cancelRun != nil && n == r.cancelAt {
				r.cancelRun()
			}
			r.cancelMu.Unlock()
			time.Sleep(time.Duration(r.bulkDelay.Load()))
		}
		r.kvServer.ServeHTTP(w, req)
	}))
	t.Cleanup(hs.Close)
	baseURL := hs.URL + "/client/v4/"
	r.primary, err = cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: token, BaseURL: baseURL, Clock: r.clk})
	if err != nil {
		t.Fatal(err)
	}
	client, err := mongokv.NewClient(mongokv.ClientConfig{URI: srv.URI()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close(context.Background()) })
	db := srv.Database(t)
	if r.shadow, err = client.Store(mongokv.Config{Database: db}); err != nil {
		t.Fatal(err)
	}
	r.env = map[string]string{
		"CLOUDFLARE_ACCOUNT_ID":      account,
		"CLOUDFLARE_KV_NAMESPACE_ID": namespace,
		"CLOUDFLARE_API_TOKEN":       token,
		"CLOUDFLARE_BASE_URL":        baseURL,
		"MONGODB_URI":                srv.URI(),
		"MONGODB_DB":                 db,
		"KVSHADOW_REPORT_SECRET":     "integration secret",
	}
	return r
}

// result is one run of the command.
type result struct {
	code           int
	stdout, stderr string
	report         *report.Report
}

// run runs shadow-report with JSON output and a 2-minute TTL tolerance
// (the primary's clock is frozen, the engine's is not), plus args.
func (r *rig) run(t *testing.T, ctx context.Context, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	all := append([]string{"--format", "json", "--ttl-tolerance", "2m", "--progress", "never", "--settle", "0"}, args...)
	err := cli.Run(ctx, all, func(k string) string { return r.env[k] }, &out, &errb)
	res := result{code: cli.ExitCode(err), stdout: out.String(), stderr: errb.String()}
	if out.Len() > 0 {
		res.report = new(report.Report)
		if err := json.Unmarshal(out.Bytes(), res.report); err != nil {
			t.Fatalf("the JSON output does not parse: %v\n%s", err, out.String())
		}
	}
	for _, secret := range []string{token, srv.URI()} {
		if strings.Contains(res.stdout+res.stderr, secret) {
			t.Fatal("the output carries a secret")
		}
	}
	return res
}

// spec is one seeded key: its value and expiry on each side ("" absent).
type spec struct {
	key        string
	pv, sv     string
	pexp, sexp time.Duration // from the rig's start; 0 for none
}

// seed writes the specs through the real clients, in bulk, with absolute
// expiries so that both sides agree to the second.
func (r *rig) seed(t testing.TB, specs []spec) {
	t.Helper()
	at := func(d time.Duration) time.Time {
		if d == 0 {
			return time.Time{}
		}
		return r.clk.Now().Add(d)
	}
	var pe, se []kv.Entry
	for _, s := range specs {
		if s.pv != "" {
			pe = append(pe, kv.Entry{Key: s.key, Value: []byte(s.pv), Expiration: at(s.pexp)})
		}
		if s.sv != "" {
			se = append(se, kv.Entry{Key: s.key, Value: []byte(s.sv), Expiration: at(s.sexp)})
		}
	}
	ctx := context.Background()
	if len(pe) > 0 {
		if err := r.primary.PutMany(ctx, pe); err != nil {
			t.Fatal(err)
		}
	}
	if len(se) > 0 {
		if err := r.shadow.PutMany(ctx, se); err != nil {
			t.Fatal(err)
		}
	}
}

var modules = []string{"loldle-emoji", "trading", "wordle"}

// divergences is 40 keys per module with every kind a scan can find, four
// or eight of each, and two keys outside any module: 97 MongoDB documents.
func divergences() []spec {
	var specs []spec
	for _, m := range modules {
		for i := range 40 {
			k := fmt.Sprintf("%s:item:%03d", m, i)
			v := fmt.Sprintf(`{"id":%d,"module":"%s"}`, i, m)
			switch i % 10 {
			case 1: // missing in shadow
				specs = append(specs, spec{key: k, pv: v})
			case 2: // extra in shadow
				specs = append(specs, spec{key: k, sv: v, sexp: 3 * time.Hour})
			case 3: // value mismatch
				specs = append(specs, spec{key: k, pv: v, sv: fmt.Sprintf(`{"id":%d,"module":"%s","v":2}`, i, m)})
			case 4: // same JSON, other bytes
				specs = append(specs, spec{key: k, pv: v, sv: fmt.Sprintf(`{ "module": "%s", "id": %d.0 }`, m, i)})
			case 5: // expiries an hour apart
				specs = append(specs, spec{key: k, pv: v, sv: v, pexp: time.Hour, sexp: 2 * time.Hour})
			case 6: // an expiry on one side only
				specs = append(specs, spec{key: k, pv: v, sv: v, pexp: time.Hour})
			case 7: // about to expire, already gone from the shadow
				specs = append(specs, spec{key: k, pv: v, pexp: 100 * time.Second})
			case 8: // equal, with equal expiries
				specs = append(specs, spec{key: k, pv: v, sv: v, pexp: 5 * time.Hour, sexp: 5 * time.Hour})
			default:
				specs = append(specs, spec{key: k, pv: v, sv: v})
			}
		}
	}
	return append(specs,
		spec{key: "config", pv: `{"v":1}`, sv: `{"v":1}`},
		spec{key: "Legacy:1", pv: "old"},
	)
}

// wantModule is what each module of divergences() must count.
var wantModule = report.Counts{
	PrimaryKeys: 36, ShadowKeys: 32, Compared: 40, Divergent: 24, Parity: 40,
	Kinds: kinds(compare.Match, 12, compare.MissingInShadow, 4, compare.ExtraInShadow, 4, compare.ValueMismatch, 4,
		compare.JSONEquivalent, 4, compare.TTLMismatch, 8, compare.ExpiredOnOneSide, 4),
}

var wantNoModule = report.Counts{
	PrimaryKeys: 2, ShadowKeys: 1, Compared: 2, Divergent: 1, Parity: 50,
	Kinds: kinds(compare.Match, 1, compare.MissingInShadow, 1),
}

func kinds(pairs ...any) report.KindCounts {
	k := report.KindCounts{}
	for _, kind := range compare.Kinds {
		k[kind] = 0
	}
	for i := 0; i < len(pairs); i += 2 {
		k[pairs[i].(compare.Kind)] = int64(pairs[i+1].(int))
	}
	return k
}

// checkCounts compares c with want exactly, parity included.
func checkCounts(t *testing.T, what string, c, want report.Counts) {
	t.Helper()
	if c.PrimaryKeys != want.PrimaryKeys || c.ShadowKeys != want.ShadowKeys || c.Compared != want.Compared ||
		c.Divergent != want.Divergent || c.Parity != want.Parity {
		t.Errorf("%s: primary/shadow/compared/divergent/parity = %d/%d/%d/%d/%v, want %d/%d/%d/%d/%v", what,
			c.PrimaryKeys, c.ShadowKeys, c.Compared, c.Divergent, c.Parity,
			want.PrimaryKeys, want.ShadowKeys, want.Compared, want.Divergent, want.Parity)
	}
	for _, k := range compare.Kinds {
		if c.Kinds[k] != want.Kinds[k] {
			t.Errorf("%s: %s = %d, want %d", what, k, c.Kinds[k], want.Kinds[k])
		}
	}
}

// comparable strips a report of what differs between equal scans: times,
// request counts, the resumed flag, the run ID, and each record's timestamp.
func comparable(t *testing.T, r *report.Report) string {
	t.Helper()
	c := *r
	c.StartedAt, c.FinishedAt, c.Resumed, c.RunID = time.Time{}, time.Time{}, false, ""
	c.Primary.Requests, c.Shadow.Requests = report.Requests{}, report.Requests{}
	c.Divergences = append([]compare.Record(nil), r.Divergences...)
	for i := range c.Divergences {
		c.Divergences[i].At = time.Time{}
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
