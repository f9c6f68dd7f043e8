package proxy_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/kv"
)

// skipUnderRace skips a test of tens of MiB through the embedded FerretDB,
// which the race detector slows to about a second a MiB (a 25 MiB write
// takes 37 s): the paths these tests take through the proxy run under the
// race detector at sizes it can afford in the unit tests of dualwrite
// (verification past a bulk read's limit, a copy's timeout by its size),
// internal/report and backends/cfkv (the 413 of a bulk get past 25 MiB).
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("tens of MiB through FerretDB under the race detector; see skipUnderRace")
	}
}

// largeValues are the sizes of the large-value tests: together far past
// the 25 MiB one Workers KV bulk get returns, with small keys beside them.
func largeValues() map[string][]byte {
	out := map[string][]byte{
		"files:25mib": bytes.Repeat([]byte("a"), kv.MaxValueSize),
		"files:16mib": bytes.Repeat([]byte("b"), 16<<20),
		"files:1mib":  bytes.Repeat([]byte("c"), 1<<20),
	}
	for i := range 12 {
		out[fmt.Sprintf("files:small%02d", i)] = fmt.Appendf(nil, `{"n":%d}`, i)
	}
	return out
}

// Values of 25 MiB, 16 MiB and 1 MiB with small keys, more than 25 MiB
// unsettled at once, written through the proxy to a shadow on MongoDB:
// every key settles (verification reads past Workers KV's bulk-get limit),
// shadow-report over the namespace passes at 100% and calls out the value
// the bot's document shape cannot hold.
func TestLargeValuesSettleThroughTheProxy(t *testing.T) {
	skipUnderRace(t)
	em := newEmulator(t, nil)
	const db = "large_settle"
	in := startInProcess(t, em.environment(db), []string{"--stage", "shadow", "--repair-interval", "200ms"})
	client := in.client(t, nil)
	ctx := t.Context()
	values := largeValues()
	for k, v := range values {
		if err := client.Put(ctx, k, v, kv.PutOptions{}); err != nil {
			t.Fatalf("Put(%s): %v", k, err)
		}
	}
	eventually(t, "every key settled", func() bool {
		st := in.stats(t).Total
		return st.Unsettled == 0 && st.Dirty == 0 && st.Queued == 0
	})
	if st := in.stats(t).Total; st.Divergences != 0 || st.Verifications[string(compare.Match)] < uint64(len(values)) {
		t.Fatalf("verifications %v, %d divergences; want a match for each of the %d keys", st.Verifications, st.Divergences, len(values))
	}

	primary, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: primaryToken, BaseURL: em.url})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := report.Run(ctx, report.Config{
		Primary: report.Side{Store: primary, Name: "cloudflare_kv"},
		Shadow:  report.Side{Store: shadowStore(t, db, nil), Name: "mongodb"},
		Secret:  []byte("test secret"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Compared != int64(len(values)) || rep.Totals.Parity != 100 {
		t.Fatalf("shadow-report: %d compared, parity %v%%; want %d at 100%%", rep.Totals.Compared, rep.Totals.Parity, len(values))
	}
	// 16 MiB and 25 MiB pass one document with their keys: chunked, and
	// missing to the bot.
	if rep.Totals.TooLargeForBot != 2 {
		t.Fatalf("shadow-report: %d values too large for the bot, want 2", rep.Totals.TooLargeForBot)
	}

}

// A 25 MiB copy to a MongoDB slower than --shadow-timeout allows a small
// copy completes, since a copy's timeout grows with its value; and a TTL
// monitor that deletes every expired document an hour on leaves the key
// readable with its value.
func TestLargeCopyToASlowShadow(t *testing.T) {
	skipUnderRace(t)
	em := newEmulator(t, nil)
	const db = "large_slow"
	env := em.environment(db)
	env["MONGODB_URI"] = slowURI(t, 2*time.Millisecond)
	in := startInProcess(t, env, []string{"--stage", "dualwrite", "--shadow-timeout", "1s"})
	client := in.client(t, nil)
	ctx := t.Context()
	value := bytes.Repeat([]byte("z"), kv.MaxValueSize)
	if err := client.Put(ctx, "files:big", value, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the copy to finish", func() bool { return in.stats(t).Total.Queued == 0 })
	if st := in.stats(t).Total; st.Drops["timeout"] != 0 || st.Dirty != 0 {
		t.Fatalf("drops %v, %d dirty: the large copy was cut short", st.Drops, st.Dirty)
	}
	ttlMonitor := bson.D{{Key: "expiresAt", Value: bson.D{{Key: "$lte", Value: time.Now().Add(61 * time.Minute)}}}}
	for _, c := range []string{"files", mongokv.ChunkCollection, mongokv.GenerationCollection} {
		if _, err := rawCollection(t, db, c).DeleteMany(ctx, ttlMonitor); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := shadowStore(t, db, nil).Get(ctx, "files:big"); err != nil || !bytes.Equal(v, value) {
		t.Fatalf("the shadow's copy after an hour of TTL deletions = %d bytes, %v", len(v), err)
	}
}
