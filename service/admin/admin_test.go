package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
)

type fakeStager struct {
	status  control.Status
	err     error
	change  control.Change
	asked   []dualwrite.Stage
	forgot  []string
	views   []control.InstanceView
	viewErr error
	hold    *control.Hold
}

func (f *fakeStager) FlipHold(context.Context) (control.Hold, bool, error) {
	if f.hold == nil {
		return control.Hold{}, false, nil
	}
	return *f.hold, true, nil
}

func (f *fakeStager) Status() control.Status { return f.status }
func (f *fakeStager) SetStage(_ context.Context, to dualwrite.Stage) (control.Change, error) {
	f.asked = append(f.asked, to)
	return f.change, f.err
}
func (f *fakeStager) Instances(context.Context) ([]control.InstanceView, error) {
	return f.views, f.viewErr
}
func (f *fakeStager) Forget(_ context.Context, id string) error {
	f.forgot = append(f.forgot, id)
	return nil
}

type fakeStore struct {
	stats     dualwrite.Stats
	dirty     []string
	unsettled []string
	repaired  int
}

func (f *fakeStore) Stats() dualwrite.Stats  { return f.stats }
func (f *fakeStore) DirtyKeys() []string     { return f.dirty }
func (f *fakeStore) UnsettledKeys() []string { return f.unsettled }
func (f *fakeStore) RepairDirty() int        { f.repaired++; return len(f.dirty) }
func (f *fakeStore) AllowDeletes() int       { return 0 }

const token = "admin-SECRET"

func newHandler(t *testing.T, st *fakeStager, stores ...*fakeStore) *Handler {
	t.Helper()
	var nss []Namespace
	for i, s := range stores {
		nss = append(nss, Namespace{ID: fmt.Sprintf("ns%d", i), Store: s})
	}
	red, err := compare.NewRedactor(compare.KeyHMAC, []byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Token: token, Stager: st, Namespaces: nss, Redactor: red,
		Ready:   func(context.Context) []Reason { return nil },
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "kvshadow_x 1") })})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func do(h http.Handler, method, path, body string, auth bool) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Host = "127.0.0.1"
	if method != http.MethodGet {
		r.Header.Set("Content-Type", "application/json")
	}
	if auth {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestTokenGuardsAllButTheProbes(t *testing.T) {
	h := newHandler(t, &fakeStager{}, &fakeStore{})
	for _, route := range [][2]string{{"GET", "/stage"}, {"PUT", "/stage"}, {"GET", "/stats"}, {"GET", "/dirty"}, {"POST", "/repair"}, {"GET", "/metrics"}, {"DELETE", "/instances/x"}} {
		if w := do(h, route[0], route[1], `{"stage":"shadow"}`, false); w.Code != http.StatusUnauthorized {
			t.Errorf("%s %s without the token: %d", route[0], route[1], w.Code)
		}
		r := httptest.NewRequest(route[0], route[1], nil)
		r.Header.Set("Authorization", "Bearer wrong")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized {
			t.Errorf("%s %s with a wrong token: %d", route[0], route[1], w.Code)
		}
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if w := do(h, "GET", p, "", false); w.Code != http.StatusOK {
			t.Errorf("%s: %d", p, w.Code)
		}
	}
	if w := do(h, "GET", "/metrics", "", true); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "kvshadow_x") {
		t.Errorf("/metrics: %d %q", w.Code, w.Body.String())
	}
	if w := do(h, "GET", "/nope", "", true); w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "PUT /stage") {
		t.Errorf("unknown route: %d %q", w.Code, w.Body.String())
	}
}

func TestPutStage(t *testing.T) {
	st := &fakeStager{change: control.Change{Document: control.Document{Stage: dualwrite.Live, Generation: 4}, Changed: true, Applied: true}}
	h := newHandler(t, st, &fakeStore{})
	w := do(h, "PUT", "/stage", `{"stage":"live"}`, true)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"generation": 4`) || st.asked[0] != dualwrite.Live {
		t.Fatalf("PUT live: %d %s", w.Code, w.Body.String())
	}
	st.change.Applied, st.change.Lag = false, "generation 4 (live) not applied: unsynced"
	if w := do(h, "PUT", "/stage", `{"stage":"live"}`, true); w.Code != http.StatusAccepted || !strings.Contains(w.Body.String(), "not applied") {
		t.Fatalf("PUT not applied here: %d %s", w.Code, w.Body.String())
	}
	for body, want := range map[string]string{
		`{"stage":"sideways"}`:                             "unknown stage",
		`{"stage":"live"} {}`:                              "data after",
		`{"stage":"live","force":true}`:                    "unknown field",
		`stage=live`:                                       "one JSON object",
		`{"stage":"` + strings.Repeat("x", MaxBody) + `"}`: "the limit is 4096",
	} {
		if w := do(h, "PUT", "/stage", body, true); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), want) {
			t.Errorf("PUT %.40q: %d %s", body, w.Code, w.Body.String())
		}
	}
	st.err = fmt.Errorf("%w: instance b is dirty", control.ErrNotDrained)
	st.change = control.Change{Document: control.Document{Stage: dualwrite.Shadow, Generation: 3}}
	w = do(h, "PUT", "/stage", `{"stage":"live"}`, true)
	if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "instance b is dirty") || !strings.Contains(w.Body.String(), `"stage": "shadow"`) {
		t.Fatalf("refused flip: %d %s", w.Code, w.Body.String())
	}
	st.err = fmt.Errorf("%w: board down", control.ErrBoard)
	if w := do(h, "PUT", "/stage", `{"stage":"live"}`, true); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("board down: %d", w.Code)
	}
}

func TestStatsDirtyRepairForget(t *testing.T) {
	a := &fakeStore{stats: dualwrite.Stats{Stage: dualwrite.Shadow, Dirty: 2, Drops: map[dualwrite.DropReason]uint64{dualwrite.DropLaneFull: 2},
		Breakers: map[dualwrite.Role]dualwrite.BreakerState{dualwrite.RoleShadow: dualwrite.BreakerClosed}, Breaker: dualwrite.BreakerClosed},
		dirty: []string{"wordle:a", "wordle:b"}}
	b := &fakeStore{stats: dualwrite.Stats{Stage: dualwrite.Shadow, Dirty: 1, Drops: map[dualwrite.DropReason]uint64{dualwrite.DropLaneFull: 1},
		Breakers: map[dualwrite.Role]dualwrite.BreakerState{dualwrite.RoleShadow: dualwrite.BreakerOpen}, Breaker: dualwrite.BreakerOpen},
		dirty: []string{"trading:c"}}
	st := &fakeStager{status: control.Status{Instance: "me", Generation: 7}}
	h := newHandler(t, st, a, b)

	var stats StatsView
	w := do(h, "GET", "/stats", "", true)
	if err := json.Unmarshal(w.Body.Bytes(), &stats); err != nil {
		t.Fatal(err)
	}
	if stats.Generation != 7 || stats.Total.Dirty != 3 || stats.Total.Drops["lane_full"] != 3 || stats.Total.Breaker != "open" ||
		stats.Namespaces["ns1"].Breakers["shadow"] != "open" {
		t.Fatalf("stats: %s", w.Body.String())
	}

	w = do(h, "GET", "/dirty", "", true)
	if strings.Contains(w.Body.String(), "wordle:a") || !strings.Contains(w.Body.String(), `"count": 2`) {
		t.Fatalf("redacted dirty keys show a key: %s", w.Body.String())
	}
	w = do(h, "GET", "/dirty?keys=plain&limit=1", "", true)
	var dv DirtyView
	_ = json.Unmarshal(w.Body.Bytes(), &dv)
	if dv.Keys != "plain" || len(dv.Namespaces["ns0"].Keys) != 1 || dv.Namespaces["ns0"].Keys[0] != "wordle:a" || !dv.Namespaces["ns0"].Truncated {
		t.Fatalf("plain dirty keys: %s", w.Body.String())
	}
	a.unsettled = []string{"wordle:u"}
	w = do(h, "GET", "/unsettled?keys=plain", "", true)
	if !strings.Contains(w.Body.String(), `"wordle:u"`) || strings.Contains(w.Body.String(), "wordle:a") {
		t.Fatalf("unsettled keys: %s", w.Body.String())
	}
	for _, q := range []string{"?keys=clear", "?limit=-1", "?limit=x"} {
		if w := do(h, "GET", "/dirty"+q, "", true); w.Code != http.StatusBadRequest {
			t.Errorf("GET /dirty%s: %d", q, w.Code)
		}
	}

	w = do(h, "POST", "/repair", "", true)
	if a.repaired != 1 || b.repaired != 1 || !strings.Contains(w.Body.String(), `"ns0": 2`) {
		t.Fatalf("repair: %s", w.Body.String())
	}
	if w := do(h, "DELETE", "/instances/other", "", true); w.Code != http.StatusNoContent || st.forgot[0] != "other" {
		t.Fatalf("forget: %d", w.Code)
	}
	if w := do(h, "DELETE", "/instances/me", "", true); w.Code != http.StatusConflict {
		t.Fatalf("forget itself: %d", w.Code)
	}
}

// TestReadyzWithoutTheToken: a probe, which sends no token, learns whether
// the instance is ready and why in general words, never a namespace ID; the
// admin token gets the details.
func TestReadyzWithoutTheToken(t *testing.T) {
	unreachable := func(ns string) Reason {
		return Reason{General: "an authoritative store does not answer", Detail: "the authoritative store (primary) of namespace " + ns + " does not answer: timeout"}
	}
	h, err := New(Config{Token: token, Stager: &fakeStager{}, Namespaces: []Namespace{{ID: "bot-kv-7f3a", Store: &fakeStore{}}},
		Ready: func(context.Context) []Reason {
			return []Reason{unreachable("bot-kv-7f3a"), unreachable("other-ns-99")}
		}})
	if err != nil {
		t.Fatal(err)
	}
	w := do(h, "GET", "/readyz", "", false)
	var v struct {
		Ready   bool     `json:"ready"`
		Reasons []string `json:"reasons"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || w.Code != http.StatusServiceUnavailable || v.Ready {
		t.Fatalf("readyz without a token: %d %s", w.Code, w.Body.String())
	}
	if len(v.Reasons) != 1 || v.Reasons[0] != "an authoritative store does not answer" {
		t.Errorf("readyz without a token gives %q, want the one general reason", v.Reasons)
	}
	for _, id := range []string{"bot-kv-7f3a", "other-ns-99", "primary", "timeout"} {
		if strings.Contains(w.Body.String(), id) {
			t.Errorf("readyz without a token names %q: %s", id, w.Body.String())
		}
	}
	w = do(h, "GET", "/readyz", "", true)
	if !strings.Contains(w.Body.String(), "bot-kv-7f3a") || !strings.Contains(w.Body.String(), "other-ns-99") {
		t.Errorf("readyz with the admin token: %s, want the details", w.Body.String())
	}
}

func TestReadyzSaysWhy(t *testing.T) {
	h, err := New(Config{Stager: &fakeStager{}, Namespaces: []Namespace{{ID: "n", Store: &fakeStore{}}},
		Ready: func(context.Context) []Reason { return []Reason{{General: "draining: the service is shutting down"}} }})
	if err != nil {
		t.Fatal(err)
	}
	w := do(h, "GET", "/readyz", "", false)
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "draining") {
		t.Fatalf("readyz: %d %s", w.Code, w.Body.String())
	}
	// No token configured: the routes are open (the service allows that on
	// loopback only), and /metrics is absent without a handler.
	if w := do(h, "GET", "/stats", "", false); w.Code != http.StatusOK {
		t.Fatalf("stats without a configured token: %d", w.Code)
	}
	if w := do(h, "GET", "/metrics", "", false); w.Code != http.StatusNotFound {
		t.Fatalf("metrics without a handler: %d", w.Code)
	}
	if _, err := New(Config{}); err == nil {
		t.Fatal("New with nothing: no error")
	}
}

// TestStateChangesNeedJSON: even with the token, a route that changes state
// refuses a body a web page could send cross-origin without a preflight
// (text/plain, a form) or no declared type at all.
func TestStateChangesNeedJSON(t *testing.T) {
	h := newHandler(t, &fakeStager{}, &fakeStore{})
	for _, route := range [][2]string{{"PUT", "/stage"}, {"POST", "/repair"}, {"DELETE", "/instances/x"}} {
		for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
			r := httptest.NewRequest(route[0], route[1], strings.NewReader(`{"stage":"shadow"}`))
			r.Header.Set("Authorization", "Bearer "+token)
			if ct != "" {
				r.Header.Set("Content-Type", ct)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusUnsupportedMediaType {
				t.Errorf("%s %s as %q: %d, want 415", route[0], route[1], ct, w.Code)
			}
		}
	}
}

// TestJSONAsWritten: the admin API's JSON is read by people: a duration is
// written to the millisecond as a person would (31.702, never
// 31.701999999999998), and "<" stays "<" (never \u003c).
func TestJSONAsWritten(t *testing.T) {
	w := httptest.NewRecorder()
	writeJSON(w, http.StatusOK, map[string]any{"error": "value <= 25 MiB & key > 0", "remaining_seconds": seconds(31702 * time.Millisecond)})
	body := w.Body.String()
	for _, want := range []string{`"value <= 25 MiB & key > 0"`, `"remaining_seconds": 31.702`} {
		if !strings.Contains(body, want) {
			t.Errorf("the body %s lacks %s", body, want)
		}
	}
}

// TestCompleteNeedsItsConfirmation: the one move that cannot be undone is
// refused without "confirm_irreversible", and the refusal says why.
func TestCompleteNeedsItsConfirmation(t *testing.T) {
	st := &fakeStager{status: control.Status{Document: control.Document{Stage: dualwrite.Rampdown, Generation: 7}},
		change: control.Change{Applied: true}}
	h := newHandler(t, st, &fakeStore{})
	w := do(h, "PUT", "/stage", `{"stage":"complete"}`, true)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "irreversible") || len(st.asked) != 0 {
		t.Fatalf("complete without its confirmation: %d %s, asked %v", w.Code, w.Body.String(), st.asked)
	}
	if w := do(h, "PUT", "/stage", `{"stage":"complete","confirm_irreversible":true}`, true); w.Code != http.StatusOK || len(st.asked) != 1 {
		t.Fatalf("complete confirmed: %d %s", w.Code, w.Body.String())
	}
	if w := do(h, "PUT", "/stage", `{"stage":"live"}`, true); w.Code != http.StatusOK || len(st.asked) != 2 {
		t.Fatalf("another stage needs no confirmation: %d %s", w.Code, w.Body.String())
	}
}
