package workers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/internal/report/cli"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/service/admin"
)

// The real bot's failed-write queue, "__retry:mongo-failed:<key>:<id>"
// beside its data in Workers KV, through the whole tee path: a bot Worker
// in workerd writes it and a module key through the tee; kvshadow-proxy
// (stage shadow, --exclude-prefix __retry:, its primary the bridge Worker
// over the same binding) tells the tee the prefix in its stage answer, so
// the tee sends the module key's copy alone; MongoDB never holds the queue
// key, and shadow-report with the same flag leaves it out, counted, at
// full parity.
func TestExcludedPrefixThroughTheTeeInWorkerd(t *testing.T) {
	front := reserve(t)
	w := newFlipWorld(t, "exclude", "http://"+front.Addr().String())
	env := w.env
	_, adminURL := startProxyOn(t, front, env, "--stage", "shadow", "--consistency-window", "0", "--exclude-prefix", "__retry:")
	b := &bots{node: w.node, acked: map[string]string{}}
	const queued = "__retry:mongo-failed:wordle:games:42:1"
	// The queue key first: its invocation's batch, if the tee sent one,
	// goes before the module key's, which the test waits for.
	for _, kv := range [][2]string{{queued, `{"op":"put"}`}, {"wordle:games:42", `{"guesses":3}`}} {
		if err := b.put("bot1", kv[0], kv[1], ""); err != nil {
			t.Fatal(err)
		}
	}

	primary := w.bridge.store(t)
	shadow := shadowStore(t, w.mongo, w.db)
	ctx := context.Background()
	adm := &admin.Client{URL: adminURL, Token: w.adminToken}
	if !until(time.Minute, func() bool {
		st, err := adm.Stats(ctx)
		_, got := shadow.Get(ctx, "wordle:games:42")
		return err == nil && got == nil && st.Total.Queued == 0
	}) {
		t.Fatal("the module key's copy never reached MongoDB")
	}
	if _, err := primary.Get(ctx, queued); err != nil {
		t.Fatalf("Workers KV lost the bot's queue key: %v", err)
	}
	if _, err := shadow.Get(ctx, queued); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("MongoDB Get of the queue key: %v, want not found", err)
	}
	st, err := adm.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The tee never sent it: the proxy dropped no copy of it either.
	if st.Total.Excluded.Copies != 0 || st.Total.Unsettled+st.Total.Dirty > 1 {
		t.Fatalf("excluded %+v, %d unsettled, %d dirty: the tee sent the queue key's copy", st.Total.Excluded, st.Total.Unsettled, st.Total.Dirty)
	}

	var out, errOut bytes.Buffer
	args := []string{"--format", "json", "--progress", "never", "--exclude-prefix", "__retry:"}
	rerr := cli.Run(ctx, args, func(k string) string { return env[k] }, &out, &errOut)
	var r report.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("shadow-report: %v (%v)\n%s", err, rerr, errOut.String())
	}
	if cli.ExitCode(rerr) != cli.ExitOK || r.Parity != 100 || r.Totals.Divergent != 0 || r.Totals.Excluded != 1 || r.Totals.PrimaryKeys != 1 {
		t.Fatalf("shadow-report: exit %d, parity %v, totals %+v\n%s", cli.ExitCode(rerr), r.Parity, r.Totals, errOut.String())
	}
}
