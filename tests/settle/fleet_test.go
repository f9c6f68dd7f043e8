package settle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// Two and three writer processes, each with its own store and journal over
// one primary and one slow shadow (5 ms plus up to 10 ms a copy, 4 lanes,
// at about 900 writes a second: copies queue for seconds, longer than the
// 1 s consistency window), each writing keys of its own and reading (a
// quarter of its operations, every read compared) the others' keys, whose
// copies are queued in another process, and 4 keys written around the
// layer (the shadow holds another value, which no writer wrote). With lanes
// deep enough never to drop, and with lanes of 64 that overflow (dropped
// copies leave their keys dirty at their writer until repaired), and
// three times with three writers wired as kvshadow-proxy wires them (each
// heartbeat's Report first waits for the lanes, up to a second; LiveFor the
// Follower's default, three 200 ms heartbeats) over lanes of 256, which
// queue copies for seconds and then overflow, no divergence is confirmed
// that a copy queued, in flight or lost at any writer explains: every key the writers wrote is reported 0 times; each
// key written around the layer is confirmed and reported exactly once by
// the fleet. After settling both stores are identical.
func TestFleetConfirmsOnlyWhatNoCopyExplains(t *testing.T) {
	for _, tc := range []struct {
		name      string
		writers   []string
		laneDepth int
		liveFor   time.Duration
		runs      int
	}{
		{"two-deep-lanes", []string{"a", "b"}, 100_000, 10 * time.Second, 1},
		{"three-overflowing-lanes", []string{"a", "b", "c"}, 64, 10 * time.Second, 1},
		// As kvshadow-proxy runs them: LiveFor is the Follower's default,
		// three heartbeats, and each heartbeat's Report waits up to a
		// second for the lanes first; copies queue for seconds before the
		// lanes overflow, and dropped copies' repairs race the others'
		// verifications.
		{"three-queueing-as-the-proxy", []string{"a", "b", "c"}, 256, 0, 3},
	} {
		for run := range tc.runs {
			// Each run has processes, emulators and a database of its own,
			// and mostly waits on its slow shadow: two at a time.
			t.Run(fmt.Sprintf("%s/%d", tc.name, run), func(t *testing.T) {
				t.Parallel()
				fleetRun(t, tc.writers, tc.laneDepth, tc.liveFor)
			})
		}
	}
}

const around = 4

func fleetRun(t *testing.T, ids []string, laneDepth int, liveFor time.Duration) {
	r := newRigOf(t, true)
	ctx := context.Background()
	for i := range around { // written around the layer: the shadow was changed behind it
		if err := r.primary.Put(ctx, aroundKey(i), []byte("primary"), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := r.shadow.Put(ctx, aroundKey(i), []byte("written around the layer"), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	began := time.Now()
	var ws []*writer
	for _, id := range ids {
		var peers []string
		for _, p := range ids {
			if p != id {
				peers = append(peers, p)
			}
		}
		ws = append(ws, r.start(t, childConfig{
			ID: id, Rate: 1200, Keys: 3000, Duration: 4 * time.Second, ReadShare: 0.25,
			Latency: 5 * time.Millisecond, Jitter: 10 * time.Millisecond, Window: time.Second, Lanes: 4,
			Fleet: &fleetConfig{Beat: 200 * time.Millisecond, LiveFor: liveFor, LaneDepth: laneDepth, Peers: peers, Around: around},
		}))
	}
	reports := map[string]int{}
	var falseKeys []string
	var latest time.Duration
	var total fleetStats
	for i, w := range ws {
		w.wait(t, 3*time.Minute)
		if len(w.errs) > 0 {
			t.Errorf("writer %s: %d errors, first %s", ids[i], len(w.errs), w.errs[0])
		}
		var s fleetStats
		if err := json.Unmarshal([]byte(w.statsRaw), &s); err != nil {
			t.Fatalf("writer %s printed no stats (%v)\n%s", ids[i], err, w.stderr.String())
		}
		for _, c := range w.confirmed {
			key, ms, _ := strings.Cut(c, " ")
			reports[key]++
			if !strings.HasPrefix(key, "wordle:around-") {
				falseKeys = append(falseKeys, key)
				continue
			}
			if at, err := strconv.ParseInt(ms, 10, 64); err == nil {
				latest = max(latest, time.UnixMilli(at).Sub(began))
			}
		}
		t.Logf("writer %s: %d writes, %d drops, %d coalesced, %d verification reads, %d confirmed and reported, %d confirmed but reported by another, %d claim errors, %d suspicions cleared, %d repairs; %d heartbeats (%d bytes each), %d board reads",
			ids[i], s.Writes, s.Drops, s.Coalesced, s.Verified, s.Confirmed, s.Elsewhere, s.ClaimErrs, s.Cleared, s.Repaired, s.Beats, s.BeatBytes, s.BoardReads)
		total.Writes += s.Writes
		total.Verified += s.Verified
		total.Drops += s.Drops
	}
	aroundReports := make([]int, around)
	for i := range around {
		aroundReports[i] = reports[aroundKey(i)]
		if n := reports[aroundKey(i)]; n != 1 {
			t.Errorf("%s, written around the layer, reported %d times by the fleet; want once", aroundKey(i), n)
		}
	}
	if len(falseKeys) > 0 {
		t.Errorf("%d divergences confirmed that a copy on its way explains (keys only the writers wrote): %s", len(falseKeys), sample(falseKeys))
	}
	n := r.identical(t)
	t.Logf("%d writers, lanes of %d: %d writes, %d drops, %d verification reads over %d keys; %d false confirmations; %d keys written around the layer, reports each %v; the last reported %s after the writers started",
		len(ids), laneDepth, total.Writes, total.Drops, total.Verified, n, len(falseKeys), around, aroundReports, latest.Round(time.Millisecond))
}
