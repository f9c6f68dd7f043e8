package settle_test

import (
	"testing"
	"time"
)

// Three processes, each with its own dual-write store and journal, write
// the same 20 hot keys of one primary and one shadow for 4 s, with a slow,
// jittery shadow (1 ms plus up to 30 ms a copy) and a quarter of their
// operations reads, all compared. Their lanes cannot order each other's
// copies, so the shadow ends some keys with an older write; each process
// then settles what it wrote. After settling the stores are identical, and
// every divergence reported was confirmed by two verification reads a
// window apart (a suspicion that a read cleared was not reported).
func TestThreeInstancesSettle(t *testing.T) {
	r := newRig(t)
	var ws []*writer
	for _, id := range []string{"a", "b", "c"} {
		ws = append(ws, r.start(t, childConfig{
			ID: id, Rate: 300, Keys: 20, Duration: 4 * time.Second,
			Latency: time.Millisecond, Jitter: 30 * time.Millisecond, Window: time.Second, Lanes: 4, ReadShare: 0.25,
		}))
	}
	var total childStats
	for i, w := range ws {
		w.wait(t, 3*time.Minute)
		s := w.stats
		if s == nil {
			t.Fatalf("writer %d printed no stats\n%s", i, w.stderr.String())
		}
		if len(w.errs) > 0 {
			t.Errorf("writer %d: %d errors, first %s", i, len(w.errs), w.errs[0])
		}
		if s.Dirty+s.Unsettled != 0 || s.JournalKeys != 0 {
			t.Errorf("writer %d ended with %d dirty, %d unsettled, %d keys in its journal", i, s.Dirty, s.Unsettled, s.JournalKeys)
		}
		if s.Records != int64(s.Confirmed) {
			t.Errorf("writer %d reported %d divergences, confirmed %d", i, s.Records, s.Confirmed)
		}
		t.Logf("writer %d: %d writes (%.0f/s), %d suspected, %d cleared, %d confirmed and reported, %d repairs, %d coalesced, %d drops, %d journal commits",
			i, s.Writes, s.Rate, s.Suspected, s.Cleared, s.Confirmed, s.Repaired, s.Coalesced, s.Drops, s.Commits)
		total.Writes += s.Writes
		total.Confirmed += s.Confirmed
		total.Cleared += s.Cleared
	}
	n := r.identical(t)
	t.Logf("3 writers, %d writes over %d keys: stores identical after settling; %d divergences confirmed (real: seen twice a window apart) and repaired, %d suspicions cleared without a report",
		total.Writes, n, total.Confirmed, total.Cleared)
}
