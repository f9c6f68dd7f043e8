package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/internal/syncbuf"
	"github.com/kvshadow/kvshadow/kv"
)

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestScanClassifiesEveryKind(t *testing.T) {
	f := newFixture(t)
	r := run(t, f.config())
	checkCounts(t, r, fixtureWant)
	tot := r.Totals
	if tot.Compared != 13 || tot.PrimaryKeys != 12 || tot.ShadowKeys != 10 || tot.Divergent != 7 {
		t.Errorf("totals = %+v", tot)
	}
	// match 5 + expired_on_one_side 1 agree, of 13.
	if tot.Parity != 46.1538 || r.Parity != tot.Parity || r.Passed {
		t.Errorf("parity = %v (gate %v, passed %v), want 46.1538 failing", tot.Parity, r.Parity, r.Passed)
	}
	for _, m := range r.Modules {
		if m.Module == "trading" && m.Parity != 100 {
			t.Errorf("trading parity = %v: an expiry race is not a divergence", m.Parity)
		}
	}
	if len(r.Divergences) != 8 || r.DivergencesOmitted != 0 {
		t.Fatalf("divergences = %d (+%d), want 8", len(r.Divergences), r.DivergencesOmitted)
	}
	var keys []string
	for _, d := range r.Divergences {
		keys = append(keys, d.Key+"="+string(d.Kind))
	}
	want := "Bad:x=missing_in_shadow loldle-emoji:b=extra_in_shadow loldle-emoji:c=ttl_mismatch loldle-emoji:d=ttl_mismatch " +
		"trading:x=expired_on_one_side wordle:c=missing_in_shadow wordle:d=value_mismatch wordle:e=json_equivalent"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("divergences in key order:\n got %s\nwant %s", got, want)
	}
	if !r.Options.ExpiriesCompared || !r.Primary.Expiries {
		t.Errorf("expiries not compared over memory stores: %+v", r.Options)
	}
	// 13 keys fit one batch: one list and one bulk get per side.
	if r.Primary.Requests.Total != 2 || r.Shadow.Requests.Total != 2 {
		t.Errorf("requests = %+v / %+v, want 2 each", r.Primary.Requests, r.Shadow.Requests)
	}
}

// Requests the caller made before the run count in its report and its
// budget.
func TestSpentRequestsCount(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Primary.Spent = report.Requests{List: 1, Total: 1}
	cfg.Primary.Budget = report.Budget{Requests: 3, Per: time.Hour}
	var progress bytes.Buffer
	cfg.Progress = &progress
	r := run(t, cfg)
	if q := r.Primary.Requests; q.List != 2 || q.Get != 1 || q.Total != 3 {
		t.Errorf("primary requests %+v, want the spent list counted", q)
	}
	if !strings.Contains(progress.String(), "cloudflare_kv 3/3 requests per 1h0m0s") {
		t.Errorf("the budget did not book the spent request: %q", progress.String())
	}
}

func TestMinParityGate(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.MinParity = 46
	if r := run(t, cfg); !r.Passed {
		t.Fatalf("46.15%% does not pass a 46%% gate")
	}
	cfg.MinParity = 46.2
	if r := run(t, cfg); r.Passed {
		t.Fatalf("46.15%% passes a 46.2%% gate")
	}
	// 6 of 13 is 46.153846...%: the gate compares to the minimum's last
	// decimal, and a negative minimum is no gate.
	for min, want := range map[float64]bool{46.1538: true, 46.1539: false, -1: true} {
		cfg.MinParity = min
		if r := run(t, cfg); r.Passed != want {
			t.Errorf("6 of 13 against %v%%: passed %v", min, r.Passed)
		}
	}
	empty := newCounted(f.clk)
	r := run(t, report.Config{Primary: report.Side{Store: empty}, Shadow: report.Side{Store: newCounted(f.clk)}, Clock: f.clk})
	if !r.Passed || r.Parity != 100 || r.Totals.Compared != 0 {
		t.Fatalf("empty stores: parity %v passed %v", r.Parity, r.Passed)
	}
}

// manyKeys seeds n keys per module into both stores, with every tenth key
// different in the shadow and every 25th missing there.
func manyKeys(t testing.TB, f *fixture, mods []string, n int) (diverge, missing int) {
	ctx := context.Background()
	for _, m := range mods {
		var pe, se []kv.Entry
		for i := range n {
			k := fmt.Sprintf("%s:key-%05d", m, i)
			v := []byte(fmt.Sprintf("value %d", i))
			pe = append(pe, kv.Entry{Key: k, Value: v})
			switch {
			case i%25 == 0:
				missing++
				continue
			case i%10 == 0:
				diverge++
				se = append(se, kv.Entry{Key: k, Value: []byte("other")})
				continue
			}
			se = append(se, kv.Entry{Key: k, Value: v})
		}
		if err := f.primary.PutMany(ctx, pe); err != nil {
			t.Fatal(err)
		}
		if err := f.shadow.PutMany(ctx, se); err != nil {
			t.Fatal(err)
		}
	}
	return diverge, missing
}

func TestScanAcrossPagesAndBatches(t *testing.T) {
	clk := clock.NewFake(epoch)
	f := &fixture{clk: clk, primary: newCounted(clk), shadow: newCounted(clk)}
	diverge, missing := manyKeys(t, f, []string{"a", "b", "c"}, 700)
	cfg := f.config()
	cfg.ListLimit = 37
	cfg.BatchSize = 23
	cfg.Concurrency = 3
	cfg.MaxRecords = 10
	r := run(t, cfg)
	tot := r.Totals
	if tot.Compared != 2100 || tot.Kinds[compare.ValueMismatch] != int64(diverge) || tot.Kinds[compare.MissingInShadow] != int64(missing) {
		t.Fatalf("totals = %+v, want 2100 compared, %d mismatched, %d missing", tot, diverge, missing)
	}
	if len(r.Divergences) != 10 || r.DivergencesOmitted != int64(diverge+missing-10) {
		t.Fatalf("records %d + omitted %d", len(r.Divergences), r.DivergencesOmitted)
	}
	if r.Divergences[0].Key != "a:key-00000" || r.Divergences[1].Key != "a:key-00010" {
		t.Fatalf("records are not the first in key order: %q, %q", r.Divergences[0].Key, r.Divergences[1].Key)
	}
	// The floor: one list request per page and one bulk get per batch.
	if got, want := r.Primary.Requests.List, int64(2100/37+1); got != want {
		t.Errorf("primary lists = %d, want %d", got, want)
	}
	if got, want := r.Primary.Requests.Get, int64((2100+22)/23); got > want+3 {
		t.Errorf("primary gets = %d, want about %d", got, want)
	}
}

func TestScope(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Scope = report.Scope{Modules: []string{"wordle", "trading"}, Prefixes: []string{"wordle:d", "Bad:"}, ExcludePrefixes: []string{"wordle:e"}}
	r := run(t, cfg)
	want := map[string]report.Counts{
		"wordle":  {PrimaryKeys: 4, ShadowKeys: 3, Compared: 4, Kinds: kinds(compare.Match, 2, compare.MissingInShadow, 1, compare.ValueMismatch, 1)},
		"trading": fixtureWant["trading"],
		"":        {PrimaryKeys: 1, ShadowKeys: 0, Compared: 1, Kinds: kinds(compare.MissingInShadow, 1)},
	}
	checkCounts(t, r, want)
	// "wordle:d" lies inside "wordle:": three ranges, one list request each per side.
	if r.Primary.Requests.List != 3 {
		t.Errorf("lists = %d, want 3", r.Primary.Requests.List)
	}

	cfg.Scope = report.Scope{ExcludeModules: []string{"wordle", "loldle-emoji"}}
	checkCounts(t, run(t, cfg), map[string]report.Counts{"trading": fixtureWant["trading"], "": fixtureWant[""]})

	for _, bad := range []report.Scope{
		{SampleRate: 1.5}, {SampleRate: -1}, {Modules: []string{"Wordle"}}, {Prefixes: []string{""}},
		{ExcludeModules: []string{"a:b"}}, {Prefixes: []string{"\xff"}},
	} {
		cfg.Scope = bad
		before := f.primary.requests()
		if _, err := report.Run(context.Background(), cfg); !errors.Is(err, report.ErrConfig) {
			t.Errorf("scope %+v: err = %v, want ErrConfig", bad, err)
		}
		if f.primary.requests() != before {
			t.Errorf("scope %+v: I/O before the error", bad)
		}
	}
}

func TestSampleIsStableAndKeepsListedCounts(t *testing.T) {
	clk := clock.NewFake(epoch)
	f := &fixture{clk: clk, primary: newCounted(clk), shadow: newCounted(clk)}
	manyKeys(t, f, []string{"a"}, 1000)
	cfg := f.config()
	cfg.Scope.SampleRate = 0.1
	r1, r2 := run(t, cfg), run(t, cfg)
	sameResult(t, r1, r2)
	m := r1.Modules[0]
	if m.PrimaryKeys != 1000 || m.ShadowKeys != 960 {
		t.Errorf("listed counts %d/%d are not the whole module", m.PrimaryKeys, m.ShadowKeys)
	}
	if m.Compared < 60 || m.Compared > 140 {
		t.Errorf("compared %d keys of 1000 at a 10%% sample", m.Compared)
	}
	if r1.Primary.Requests.Get > 2 {
		t.Errorf("a 10%% sample of 1000 keys took %d bulk gets", r1.Primary.Requests.Get)
	}
}

func TestConfigErrors(t *testing.T) {
	f := newFixture(t)
	for name, mut := range map[string]func(*report.Config){
		"no primary":        func(c *report.Config) { c.Primary.Store = nil },
		"apply alone":       func(c *report.Config) { c.Repair.Apply = true },
		"bad authoritative": func(c *report.Config) { c.Repair = report.Repair{Enabled: true, Authoritative: "both"} },
		"bad policy":        func(c *report.Config) { c.KeyPolicy = "clear" },
		"list limit":        func(c *report.Config) { c.ListLimit = 1001 },
		"parity":            func(c *report.Config) { c.MinParity = 101 },
		"budget period":     func(c *report.Config) { c.Primary.Budget = report.Budget{Requests: 5} },
	} {
		cfg := f.config()
		mut(&cfg)
		if _, err := report.Run(context.Background(), cfg); !errors.Is(err, report.ErrConfig) {
			t.Errorf("%s: err = %v, want ErrConfig", name, err)
		}
	}
	if f.primary.requests()+f.shadow.requests() != 0 {
		t.Fatal("a bad config reached the stores")
	}
}

func TestReadErrorsBecomeErrorKinds(t *testing.T) {
	f := newFixture(t)
	f.shadow.failAll, f.shadow.failErr = true, errors.New("SECRET-VALUE-1 quoted by a driver")
	cfg := f.config()
	r := run(t, cfg)
	// Keys listed only on the primary are not read from the shadow.
	if got := r.Totals.Kinds[compare.ShadowError]; got != 10 {
		t.Errorf("shadow errors = %d, want 10 (the keys the shadow listed)", got)
	}
	if r.Passed {
		t.Error("a scan that could not read the shadow passed")
	}
	for _, d := range r.Divergences {
		if d.Kind == compare.ShadowError && d.Error != "shadow: other" {
			t.Errorf("error = %q, want its class only", d.Error)
		}
	}
	if out := mustJSON(t, r); strings.Contains(out, "SECRET-VALUE") {
		t.Fatalf("the report leaks a value: %s", out)
	}
}

func TestListFailureEndsTheRun(t *testing.T) {
	f := newFixture(t)
	f.primary.listFail = errors.New("listing broke")
	cfg := f.config()
	cfg.Checkpoint = filepath.Join(t.TempDir(), "cp.json")
	_, err := report.Run(context.Background(), cfg)
	if err == nil || errors.Is(err, report.ErrInterrupted) || !strings.Contains(err.Error(), "listing broke") {
		t.Fatalf("err = %v, want the listing failure", err)
	}
}

func TestUnavailableHonoursRetryAfter(t *testing.T) {
	clk := clock.NewFake(epoch)
	f := &fixture{clk: clk, primary: newCounted(clk), shadow: newCounted(clk)}
	diverge, missing := manyKeys(t, f, []string{"a", "b"}, 50)
	f.primary.failGets, f.primary.failErr = 2, kv.Unavailable("cloudflare_kv", 30*time.Second, errors.New("429"))
	cfg := f.config()
	var notices syncbuf.Buffer
	cfg.Notices = &notices
	start := f.clk.Now()
	done := make(chan *report.Report)
	go func() {
		r, err := report.Run(context.Background(), cfg)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	r := advanceUntil(t, f.clk, done, time.Second)
	if k := r.Totals.Kinds; r.Totals.Compared != 100 || k[compare.ValueMismatch] != int64(diverge) ||
		k[compare.MissingInShadow] != int64(missing) || k[compare.PrimaryError] != 0 {
		t.Errorf("totals = %+v", r.Totals)
	}
	if r.Primary.Requests.Retries != 2 || r.Primary.Requests.Get != 3 {
		t.Errorf("requests = %+v, want 3 gets with 2 retries", r.Primary.Requests)
	}
	if waited := f.clk.Now().Sub(start); waited < 60*time.Second {
		t.Errorf("the run went on after %s, before the two 30 s Retry-After delays", waited)
	}
	if got := notices.String(); strings.Count(got, "cloudflare_kv unavailable; pausing its requests for 30s, then retry") != 2 {
		t.Errorf("notices = %q", got)
	}
}

// advanceUntil moves the fake clock by step whenever a goroutine waits on
// it, until the run delivers its report.
func advanceUntil(t *testing.T, clk *clock.Fake, done <-chan *report.Report, step time.Duration) *report.Report {
	t.Helper()
	for {
		select {
		case r := <-done:
			if r == nil {
				t.FailNow()
			}
			return r
		default:
		}
		if clk.Timers() > 0 {
			clk.Advance(step)
		}
		runtime.Gosched()
	}
}

func TestBudgetWindow(t *testing.T) {
	clk := clock.NewFake(epoch)
	f := &fixture{clk: clk, primary: newCounted(clk), shadow: newCounted(clk)}
	manyKeys(t, f, []string{"a"}, 100)
	stamps := &stampStore{counted: f.primary, clk: clk}
	cfg := f.config()
	cfg.Primary = report.Side{Store: stamps, Budget: report.Budget{Requests: 3, Per: time.Minute}}
	cfg.BatchSize, cfg.ListLimit = 10, 50
	start := clk.Now()
	done := make(chan *report.Report)
	go func() {
		r, err := report.Run(context.Background(), cfg)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	r := advanceUntil(t, clk, done, 5*time.Second)
	if r.Totals.Compared != 100 {
		t.Fatalf("compared %d", r.Totals.Compared)
	}
	// 2 lists + 10 gets: no minute may hold more than 3 of them.
	if len(stamps.at) != 12 {
		t.Fatalf("%d requests, want 12", len(stamps.at))
	}
	// A request reaches the store at or after the moment the budget let
	// it start (and the clock may move in between, while another
	// goroutine's wait parks it), so the arrivals are checked against what
	// 3 a minute allows from the start: the k-th arrival, in time order,
	// no sooner than k/3 whole minutes in. Four in the first minute, or
	// none held back at all, fails.
	at := slices.SortedFunc(slices.Values(stamps.at), time.Time.Compare)
	for k, a := range at {
		if earliest := start.Add(time.Duration(k/3) * time.Minute); a.Before(earliest) {
			t.Fatalf("request %d (in time order) reached the store %s in, before %s: more than 3 in a minute", k, a.Sub(start), earliest.Sub(start))
		}
	}
}

// stampStore records when each request reached the store.
type stampStore struct {
	*counted
	clk *clock.Fake
	mu  sync.Mutex
	at  []time.Time
}

func (s *stampStore) stamp() {
	s.mu.Lock()
	s.at = append(s.at, s.clk.Now())
	s.mu.Unlock()
}

func (s *stampStore) List(ctx context.Context, o kv.ListOptions) (kv.ListResult, error) {
	s.stamp()
	return s.counted.List(ctx, o)
}

func (s *stampStore) GetMany(ctx context.Context, keys []string) ([]kv.Entry, error) {
	s.stamp()
	return s.counted.GetMany(ctx, keys)
}

func TestStoreWithoutExpiriesComparesValues(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Shadow.Store = plainStore{f.shadow}
	r := run(t, cfg)
	if r.Options.ExpiriesCompared || r.Shadow.Expiries {
		t.Fatal("expiries claimed compared through a store that cannot read them")
	}
	if r.Totals.Kinds[compare.TTLMismatch] != 0 {
		t.Errorf("ttl mismatches = %d without expiries", r.Totals.Kinds[compare.TTLMismatch])
	}
	// Read key by key: one Get per key the shadow listed.
	if r.Shadow.Requests.Get != 10 {
		t.Errorf("shadow gets = %d, want 10", r.Shadow.Requests.Get)
	}
}

func TestUnorderedListingFails(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Shadow.Store = reversed{f.shadow}
	if _, err := report.Run(context.Background(), cfg); !errors.Is(err, report.ErrUnordered) {
		t.Fatalf("err = %v, want ErrUnordered", err)
	}
}

type reversed struct{ *counted }

func (r reversed) List(ctx context.Context, o kv.ListOptions) (kv.ListResult, error) {
	res, err := r.counted.List(ctx, o)
	for i, j := 0, len(res.Keys)-1; i < j; i, j = i+1, j-1 {
		res.Keys[i], res.Keys[j] = res.Keys[j], res.Keys[i]
	}
	return res, err
}

func TestCaps(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.MaxModules = 2
	cfg.MaxRecords = -1
	r := run(t, cfg)
	var names []string
	for _, m := range r.Modules {
		names = append(names, m.Module)
	}
	// Modules are met in key order: "" (Bad:x), loldle-emoji, then the cap.
	if got := strings.Join(names, ","); got != ",*,loldle-emoji" {
		t.Errorf("modules = %q", got)
	}
	if r.Totals.Compared != 13 || len(r.Divergences) != 0 || r.DivergencesOmitted != 8 {
		t.Errorf("compared %d, records %d, omitted %d", r.Totals.Compared, len(r.Divergences), r.DivergencesOmitted)
	}
}

func TestProgressAndNotices(t *testing.T) {
	f := newFixture(t)
	var progress, notices bytes.Buffer
	cfg := f.config()
	cfg.Progress, cfg.Notices, cfg.ExpectedKeys = &progress, &notices, 26
	run(t, cfg)
	out := progress.String()
	if !strings.HasPrefix(out, "\r13 of ~26 keys (50.0%) (at wordle)") || !strings.HasSuffix(out, "\n") ||
		!strings.Contains(out, "cloudflare_kv 2/1200 requests per 5m0s") || !strings.Contains(out, "mongodb 2 requests") {
		t.Fatalf("progress = %q", out)
	}
	if notices.Len() != 0 {
		t.Fatalf("notices without a checkpoint: %q", notices.String())
	}
}

// In a log, progress is plain lines at the interval asked, with the share
// done, and a stalled count says that it waits for the budget and when it
// resumes.
func TestProgressLinesForLogs(t *testing.T) {
	clk := clock.NewFake(epoch)
	f := &fixture{clk: clk, primary: newCounted(clk), shadow: newCounted(clk)}
	manyKeys(t, f, []string{"a"}, 100)
	var progress syncbuf.Buffer
	cfg := f.config()
	cfg.Primary.Budget = report.Budget{Requests: 3, Per: time.Minute}
	cfg.BatchSize, cfg.ListLimit = 10, 50
	cfg.Progress, cfg.ProgressLines, cfg.ProgressEvery, cfg.ExpectedKeys = &progress, true, 10*time.Second, 100
	done := make(chan *report.Report)
	go func() {
		r, err := report.Run(context.Background(), cfg)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	// The clock moves only while the progress timer is armed beside a
	// waiting request, so that no tick of progress is skipped.
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
			if clk.Timers() >= 2 {
				clk.Advance(5 * time.Second)
			}
			runtime.Gosched()
		}
	}
	out := progress.String()
	if strings.ContainsAny(out, "\r\x1b") {
		t.Fatalf("progress for a log holds terminal codes: %q", out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, l := range lines {
		if !strings.HasPrefix(l, "progress: ") {
			t.Fatalf("line %q is not a progress line", l)
		}
	}
	if !regexp.MustCompile(`waiting for cloudflare_kv's API budget \(resumes in \d+ s\) · \d+ of ~100 keys \(\d+\.\d%\)`).MatchString(out) {
		t.Errorf("no waiting line:\n%s", out)
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "progress: 100 of ~100 keys (100.0%)") {
		t.Errorf("last line %q", last)
	}
	if len(lines) < 2 {
		t.Errorf("%d lines over three minutes of waits, want one every 10 s:\n%s", len(lines), out)
	}
}

func TestKeysAreRedactedByDefault(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.KeyPolicy = ""
	r := run(t, cfg)
	if r.Options.KeyPolicy != compare.KeyHMAC {
		t.Fatalf("default policy = %s", r.Options.KeyPolicy)
	}
	for _, format := range []report.Format{report.FormatTable, report.FormatJSON, report.FormatMarkdown, report.FormatHTML} {
		var b bytes.Buffer
		if err := report.Render(&b, r, format); err != nil {
			t.Fatal(err)
		}
		for _, leak := range []string{"wordle:c", "only primary", "SECRET-VALUE", "about to expire"} {
			if strings.Contains(b.String(), leak) {
				t.Errorf("%s output holds %q", format, leak)
			}
		}
	}
}

func TestCheckpointFileIsPrivate(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Checkpoint = filepath.Join(t.TempDir(), "cp.json")
	if err := f.interrupt(cfg, 1); !errors.Is(err, report.ErrInterrupted) {
		t.Fatalf("err = %v", err)
	}
	st, err := os.Stat(cfg.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("checkpoint mode %v, want 0600", st.Mode().Perm())
	}
}

// A shadow value that is not valid UTF-8 is called out, whatever its kind:
// MongoDB would hold it as BSON Binary, which the JavaScript bot reads as
// an object. Parity still counts it by its bytes.
func TestBinaryInShadowIsCalledOut(t *testing.T) {
	f := newFixture(t)
	put(t, f.primary, "trading:bin", "\xff\x00", 0)
	put(t, f.shadow, "trading:bin", "\xff\x00", 0)
	put(t, f.shadow, "trading:extra-bin", "\xc3\x28", 0)
	put(t, f.shadow, "trading:text", "héllo", 0)
	put(t, f.primary, "trading:text", "héllo", 0)
	cfg := f.config()
	cfg.KeyPolicy = compare.KeyPlain
	r := run(t, cfg)
	if r.Totals.BinaryInShadow != 2 || len(r.BinaryInShadow) != 2 {
		t.Fatalf("binary in shadow: %d counted, %d listed", r.Totals.BinaryInShadow, len(r.BinaryInShadow))
	}
	if got := r.BinaryInShadow[0]; got.Key != "trading:bin" || got.Kind != compare.Match {
		t.Errorf("first listed %+v, want trading:bin as a match", got)
	}
	if got := r.BinaryInShadow[1]; got.Key != "trading:extra-bin" || got.Kind != compare.ExtraInShadow {
		t.Errorf("second listed %+v", got)
	}
	for _, m := range r.Modules {
		if want := map[string]int64{"trading": 2}[m.Module]; m.BinaryInShadow != want {
			t.Errorf("module %q: %d binary, want %d", m.Module, m.BinaryInShadow, want)
		}
	}
	if v := report.Verdict(r); !strings.Contains(v, "2 values in the shadow not UTF-8 text") {
		t.Errorf("verdict %q does not call them out", v)
	}
	for _, format := range []report.Format{report.FormatTable, report.FormatMarkdown, report.FormatHTML} {
		var b bytes.Buffer
		if err := report.Render(&b, r, format); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "Values the JavaScript bot cannot read (2)") || !strings.Contains(b.String(), "BSON Binary") ||
			!strings.Contains(b.String(), "extra-bin") {
			t.Errorf("%s does not call the values out:\n%s", format, b.String())
		}
	}
}
