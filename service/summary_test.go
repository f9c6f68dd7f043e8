package service

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/internal/syncbuf"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/service/admin"
)

// GET /stats opens with a summary an operator reads at a glance: stage,
// generation, the operations the front answered and their errors, the
// breaker, dirty and unsettled keys, divergences; the detail follows.
func TestStatsOpenWithASummary(t *testing.T) {
	r := start(t)
	ctx := t.Context()
	cl := r.client(t, DemoNamespace)
	for _, k := range []string{"wordle:a", "wordle:b", "wordle:c"} {
		if err := cl.Put(ctx, k, []byte("v"), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.Get(ctx, "wordle:missing"); !errorsIs(err, kv.ErrNotFound) {
		t.Fatalf("Get of a missing key: %v", err)
	}
	// The primary fails: the client's request is an error.
	r.primary[DemoNamespace].SetOutage(true)
	if err := cl.Put(ctx, "wordle:d", []byte("v"), kv.PutOptions{}); err == nil {
		t.Fatal("a write succeeded with the primary down")
	}
	r.primary[DemoNamespace].SetOutage(false)

	var raw strings.Builder
	code, err := r.adminClient().Do(ctx, "GET", "/stats", "", &rawJSON{&raw})
	if err != nil || code != 200 {
		t.Fatalf("GET /stats: %d %v", code, err)
	}
	if !strings.HasPrefix(raw.String(), "{\n  \"summary\": {\n    \"instance\": \"demo\",\n    \"stage\": \"shadow\",") {
		t.Errorf("/stats does not open with the summary:\n%.400s", raw.String())
	}
	s := r.stats(t).Summary
	if s.Operations != 5 || s.Errors != 1 || s.Stage != "shadow" || s.Generation != 1 || s.Breaker != "closed" {
		t.Errorf("summary %+v; want 5 operations (3 puts, a missing key, a failed put), 1 error, stage shadow at generation 1, breaker closed", s)
	}
}

// rawJSON keeps an answer's bytes as they came.
type rawJSON struct{ b *strings.Builder }

func (r *rawJSON) UnmarshalJSON(b []byte) error { r.b.Write(b); return nil }

// A proxy that cannot listen never joins the control board: no heartbeat
// shows it alive for the other instances to wait on.
func TestAProxyThatCannotListenIsNeverOnTheBoard(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	c, err := Parse([]string{"--demo", "--listen", taken.Addr().String(), "--admin-listen", "127.0.0.1:0"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	board := control.NewMemoryBoard()
	open := func(ctx context.Context, c *Config, p Plumbing) (*Backends, error) {
		b, err := OpenDemo(ctx, c, p)
		if err != nil {
			return nil, err
		}
		b.Board = board
		return b, nil
	}
	var out, logs syncbuf.Buffer
	if err := Run(t.Context(), c, &out, &logs, WithBackends(open)); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Run on a taken port: %v", err)
	}
	beats, err := board.Instances(t.Context())
	if err != nil || len(beats) != 0 {
		t.Fatalf("the board holds %+v (%v), want no instance", beats, err)
	}
}

// A confirmed divergence is logged with namespace= once: the key's module,
// as the kv layer's lines name it; the Workers KV namespace the instance
// serves is kv_namespace=.
func TestDivergenceLinesNameTheNamespaceOnce(t *testing.T) {
	r := start(t, "--repair-interval", "200ms", "--heartbeat-interval", "100ms")
	ctx := t.Context()
	// A key copied and still unsettled when its shadow value is changed
	// around the layer: its verification must find the difference. One
	// verified before the change is settled and never read again, so
	// another key is tried.
	for i := 0; ; i++ {
		key := fmt.Sprintf("wordle:games:%d", i)
		if err := r.client(t, DemoNamespace).Put(ctx, key, []byte("v1"), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the copy in the shadow", func() bool {
			v, err := r.shadows[DemoNamespace].Inner().Get(ctx, key)
			return err == nil && string(v) == "v1"
		})
		if err := r.shadows[DemoNamespace].Inner().Put(ctx, key, []byte("changed"), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		var unsettled admin.DirtyView
		r.call(t, "GET", "/unsettled?keys=plain", "", &unsettled)
		if slices.Contains(unsettled.Namespaces[DemoNamespace].Keys, key) {
			break
		}
	}
	eventually(t, "the divergence confirmed", func() bool { return r.stats(t).Summary.Divergences.Confirmed > 0 })
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	var line string
	for l := range strings.SplitSeq(r.stderr, "\n") {
		if strings.Contains(l, "dualwrite: divergence") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no divergence line in:\n%s", r.stderr)
	}
	if strings.Count(line, " namespace=") != 1 || !strings.Contains(line, " namespace=wordle") || !strings.Contains(line, "kv_namespace="+DemoNamespace) {
		t.Errorf("divergence line %q: want namespace=wordle once and kv_namespace=%s", line, DemoNamespace)
	}
}
