package proxy_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// allKeys lists every key of st.
func allKeys(t *testing.T, st kv.Store) []string {
	t.Helper()
	var keys []string
	opts := kv.ListOptions{}
	for {
		page, err := st.List(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, page.Keys...)
		if page.Done {
			return keys
		}
		opts.Cursor = page.Cursor
	}
}

// TestNoStoreBecomesAuthoritativeByAccident: a bot migrated to live on its
// database; a stage document written before pairings gets the pairing of
// the first instance that starts on it. Then each wrong setting that would
// make an empty MongoDB the truth (where its read comparisons and repairs
// deleted 3 of 30 of the bot's keys from Workers KV) is refused: exit 2,
// one line naming the database, the namespace and --new-pairing, Workers
// KV untouched (its keys counted before and after).
func TestNoStoreBecomesAuthoritativeByAccident(t *testing.T) {
	bin := build(t)
	em := newEmulator(t, nil)
	db := srv.Database(t)
	ctx := context.Background()
	mc, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	board := control.NewMongoBoard(mc.Database(db))
	if err := board.Swap(ctx, 0, control.Document{Stage: dualwrite.Shadow, Generation: 1, UpdatedAt: time.Now(), UpdatedBy: "an older version"}); err != nil {
		t.Fatal(err)
	}
	first := startProcess(t, bin, em.environment(db), "--stage", "shadow", "--repair-interval", "200ms")
	pairing := control.Pairing{Account: account, Namespaces: []control.Namespace{{ID: namespace, Database: db}}}
	if doc, err := board.Load(ctx); err != nil || doc.Generation != 2 || doc.Stage != dualwrite.Shadow || !slices.Equal(doc.Pairing.Namespaces, pairing.Namespaces) || doc.Pairing.Account != account {
		t.Errorf("the stage document after the first start: %+v, %v; want shadow at generation 2 with the pairing %s", doc, err, pairing)
	}
	if said := logLines(first.log(), "recorded this instance's pairing"); len(said) != 1 || !strings.Contains(said[0], "which named none") {
		t.Errorf("the recording of the pairing is said in %d lines, want one:\n%s", len(said), first.log())
	}
	client := first.client(t, nil)
	for i := range 30 {
		if err := client.Put(ctx, fmt.Sprintf("wordle:bot:%02d", i), []byte("v"), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the copies verified", func() bool { st := first.stats(t).Total; return st.Dirty == 0 && st.Unsettled == 0 })
	for _, next := range []string{"handover", "live"} {
		if code, out := first.setStage(t, next); code != http.StatusOK {
			t.Fatalf("PUT %s: %d %v", next, code, out)
		}
	}
	if err := first.stop(); err != nil {
		t.Fatalf("the first run: %v\n%s", err, first.log())
	}
	before := allKeys(t, em.store)
	if len(before) != 30 {
		t.Fatalf("Workers KV holds %d keys, want 30", len(before))
	}

	fresh, typo := srv.Database(t), srv.Database(t)
	for _, c := range []struct {
		name string
		db   string // MONGODB_DB
		args []string
		says []string
	}{
		{"--stage live on a new database", fresh, []string{"--stage", "live"}, []string{
			"control: invalid config: the control board holds no stage document, and a first start in live on it is refused",
			"namespace " + namespace + " (MongoDB database " + fresh + ")", "start once with --new-pairing"}},
		{"a mistyped MONGODB_DB", typo, []string{"--stage", "live"}, []string{
			"the control board holds no stage document", "namespace " + namespace + " (MongoDB database " + typo + ")", "--new-pairing"}},
		{"a mistyped MONGODB_DB, with the board named by --control-db", typo, []string{"--stage", "live", "--control-db", db}, []string{
			"the stage document (live at generation 4) governs Workers KV account " + account + ", namespace " + namespace + " (MongoDB database " + db + "), " +
				"and this instance serves Workers KV account " + account + ", namespace " + namespace + " (MongoDB database " + typo + ")", "--new-pairing"}},
		{"--new-pairing on the mistyped MONGODB_DB", typo, []string{"--stage", "live", "--new-pairing"}, []string{
			"MongoDB, authoritative in live, holds no key while Workers KV holds some", "(MongoDB database " + typo + ")"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := em.environment(c.db)
			stderr, code := runToExit(t, bin, env, c.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2:\n%s", code, stderr)
			}
			for _, s := range c.says {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr does not say %q:\n%s", s, stderr)
				}
			}
			if strings.Contains(stderr, primaryToken) || strings.Contains(stderr, adminToken) {
				t.Errorf("stderr quotes a token:\n%s", stderr)
			}
			if after := allKeys(t, em.store); !slices.Equal(after, before) {
				t.Errorf("Workers KV holds %d keys after the refused start, want the %d before", len(after), len(before))
			}
		})
	}

	// The bot's documents gone from its database under its stage document
	// (live): refused as well, --new-pairing or not.
	if err := mc.Database(db).Collection("wordle").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	stderr, code := runToExit(t, bin, em.environment(db), "--stage", "live", "--new-pairing")
	if code != 2 || !strings.Contains(stderr, "MongoDB, authoritative in live, holds no key while Workers KV holds some") {
		t.Errorf("a start in live over an emptied MongoDB: exit %d, want 2 saying it:\n%s", code, stderr)
	}
	if after := allKeys(t, em.store); !slices.Equal(after, before) {
		t.Errorf("Workers KV holds %d keys, want the %d before", len(after), len(before))
	}
}

// TestABulkDeleteRepairIsHeld: MongoDB authoritative (live) holds 1 key of
// the bot's 301, Workers KV all of them: reads compared find 300 missing in
// MongoDB, and their repairs, deletes from Workers KV, are held, all of
// them, until an operator allows them (POST /repair with allow_deletes).
func TestABulkDeleteRepairIsHeld(t *testing.T) {
	bin := build(t)
	em := newEmulator(t, nil)
	db := srv.Database(t)
	ctx := context.Background()
	if err := shadowStore(t, db, nil).Put(ctx, "wordle:kept", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	const n = 300
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("wordle:bulk:%03d", i)
		if err := em.store.Put(ctx, keys[i], []byte("v"), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := em.store.Put(ctx, "wordle:kept", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, bin, em.environment(db), "--stage", "live", "--new-pairing", "--compare-rate", "1",
		"--consistency-window", "100ms", "--repair-interval", "1h", "--heartbeat-interval", "100ms")
	client := p.client(t, nil)
	for _, k := range keys {
		if _, err := client.Get(ctx, k); err == nil {
			t.Fatalf("%s read from MongoDB, which does not hold it", k)
		}
	}
	eventually(t, "the reads' differences held", func() bool { return p.stats(t).Total.Suspects == n })
	// Two heartbeats after the last read: the fleet's watermark (this
	// instance alone) is past every difference, so that one verification
	// pass confirms them all and one repair pass takes them.
	read, beats := time.Now(), map[time.Time]bool{}
	eventually(t, "two heartbeats after the reads", func() bool {
		for _, in := range p.stage(t).Instances {
			if in.At.After(read) {
				beats[in.At] = true
			}
		}
		return len(beats) >= 2
	})
	var out struct {
		Held map[string]int `json:"deletes_held"`
	}
	p.call(t, "POST", "/repair", "", nil)
	eventually(t, "the deletes held", func() bool { return p.stats(t).Total.DeletesHeld == n })
	if got := len(allKeys(t, em.store)); got != n+1 {
		t.Errorf("Workers KV holds %d keys, want %d: a repair deleted in bulk", got, n+1)
	}
	st := p.stats(t).Total
	if st.Dirty != n || st.Repairs["deleted"] != 0 {
		t.Errorf("dirty %d, repairs %v; want %d dirty, none deleted", st.Dirty, st.Repairs, n)
	}
	if code := p.call(t, "POST", "/repair", "", &out); code != http.StatusOK || out.Held[namespace] != n {
		t.Errorf("POST /repair: %d %v, want %d held", code, out, n)
	}
	if got := len(allKeys(t, em.store)); got != n+1 {
		t.Errorf("after another pass Workers KV holds %d keys, want %d", got, n+1)
	}
	if held := logLines(p.log(), "the deletes are held"); len(held) != 1 || !strings.Contains(held[0], fmt.Sprintf("would delete %d keys from the primary", n)) {
		t.Errorf("the hold is said in %d lines, want one:\n%s", len(held), p.log())
	}

	// The operator allows them.
	if code := p.call(t, "POST", "/repair", `{"allow_deletes": true}`, nil); code != http.StatusOK {
		t.Fatalf("POST /repair allow_deletes: %d", code)
	}
	eventually(t, "the deletes made", func() bool { return len(allKeys(t, em.store)) == 1 })
	if st := p.stats(t).Total; st.DeletesHeld != 0 {
		t.Errorf("after the allowance: %d held", st.DeletesHeld)
	}
}
