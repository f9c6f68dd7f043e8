package settle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// fleetConfig is what a fleet writer is told besides childConfig: it joins
// the control board in the rig's MongoDB database, heartbeats every Beat
// with its store's watermark, and confirms nothing another instance's copy
// explains (control.Fleet). NoFleet runs the store without it, as every
// store ran before.
type fleetConfig struct {
	Beat      time.Duration `json:"beat"`
	LiveFor   time.Duration `json:"live_for"` // 0: the Follower's default
	LaneDepth int           `json:"lane_depth"`
	Peers     []string      `json:"peers"`  // the writers whose keys this one reads
	Around    int           `json:"around"` // keys written around the layer, read too
	NoFleet   bool          `json:"no_fleet"`
}

// fleetStats is what a fleet writer prints at its end.
type fleetStats struct {
	childStats
	Held       int    `json:"held"`
	Elsewhere  uint64 `json:"elsewhere"`
	ClaimErrs  uint64 `json:"claim_errors"`
	Verified   uint64 `json:"verified"`
	Beats      int64  `json:"beats"`
	BoardReads int64  `json:"board_reads"`
	BeatBytes  int    `json:"beat_bytes"`
}

// ownKey is the n-th key of writer id: each writer writes only its own.
func ownKey(id string, n int) string { return "wordle:" + id + "-" + strconv.Itoa(n) }

func aroundKey(n int) string { return "wordle:around-" + strconv.Itoa(n) }

// namedSink prints each divergence reported, by its key (the writers'
// records show keys plainly) and the time, for the test to judge.
type namedSink struct{ n atomic.Int64 }

func (s *namedSink) Divergence(_ context.Context, r compare.Record) {
	s.n.Add(1)
	say("confirmed %s %d", r.Key, time.Now().UnixMilli())
}

// fleetTarget is the control.Target of a fleet writer: its one store.
type fleetTarget struct {
	st    *dualwrite.Store
	beats atomic.Int64
}

func (t *fleetTarget) Apply(ctx context.Context, stage dualwrite.Stage) error {
	return t.st.SetStage(ctx, stage)
}

func (t *fleetTarget) Report(ctx context.Context) control.Heartbeat {
	t.beats.Add(1)
	// As kvshadow-proxy's: the lanes drain for up to a second first.
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	drained := t.st.Flush(ctx) == nil
	s := t.st.Stats()
	return control.Heartbeat{Drained: drained, Dirty: s.Dirty, Unsettled: s.Unsettled,
		Watermarks: map[string]time.Time{namespace: t.st.Watermark()}}
}

// countingBoard counts the heartbeats read.
type countingBoard struct {
	*control.MongoBoard
	reads atomic.Int64
}

func (b *countingBoard) Instances(ctx context.Context) ([]control.Heartbeat, error) {
	b.reads.Add(1)
	return b.MongoBoard.Instances(ctx)
}

// fleetChild writes its own keys at Rate for Duration and reads (ReadShare
// of its operations, every read compared) its peers' keys and the keys
// written around the layer, through a store with a slow shadow; then it
// settles, leaves the board and prints its stats.
func fleetChild(c childConfig) error {
	ctx := context.Background()
	primary, shadow, j, done, err := openWriterStores(ctx, c)
	if err != nil {
		return err
	}
	defer done()
	client, err := mongo.Connect(options.Client().ApplyURI(c.MongoURI))
	if err != nil {
		return err
	}
	defer func() { _ = client.Disconnect(ctx) }()
	board := &countingBoard{MongoBoard: control.NewMongoBoard(client.Database(c.MongoDB))}
	fc := c.Fleet
	fleet := control.NewFleet(board)
	plain, err := compare.NewRedactor(compare.KeyPlain, nil)
	if err != nil {
		return err
	}
	sink := &namedSink{}
	cfg := dualwrite.Config{
		Primary: primary, Shadow: shadow, Stage: dualwrite.Shadow, CompareRate: 1,
		ConsistencyWindow: c.Window, RepairInterval: c.Window / 4, Lanes: c.Lanes, LaneDepth: fc.LaneDepth,
		Journal: j, Sink: sink, Redactor: plain, Breaker: dualwrite.BreakerConfig{FailuresToOpen: 1000},
	}
	if !fc.NoFleet {
		cfg.Fleet = fleet.Namespace(namespace)
	}
	st, err := dualwrite.New(cfg, dualwrite.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))))
	if err != nil {
		return err
	}
	tgt := &fleetTarget{st: st}
	follower, err := control.NewFollower(control.Config{Board: board, Target: tgt, Instance: c.ID, Initial: dualwrite.Shadow,
		PollInterval: fc.Beat, HeartbeatInterval: fc.Beat, LiveFor: fc.LiveFor, Fleet: fleet}, control.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))))
	if err != nil {
		return err
	}
	if err := follower.Start(ctx); err != nil {
		return err
	}
	say("ready")

	stop := paced(c, func(rng *rand.Rand, w, i int) bool {
		if rng.Float64() < c.ReadShare {
			k := aroundKey(rng.IntN(max(fc.Around, 1)))
			if fc.Around == 0 || rng.IntN(10) != 0 {
				k = ownKey(fc.Peers[rng.IntN(len(fc.Peers))], rng.IntN(c.Keys))
			}
			if _, err := st.Get(ctx, k); err != nil && !isNotFound(err) {
				say("error %v", err)
			}
			return false
		}
		k := ownKey(c.ID, rng.IntN(c.Keys))
		if err := st.Put(ctx, k, fmt.Appendf(nil, "%s-%d-%d", c.ID, w, i), kv.PutOptions{}); err != nil {
			say("error %v", err)
			return false
		}
		return true
	})
	time.Sleep(c.Duration)
	writes := stop()

	// Settle, differences held included: each is confirmed or cleared.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		s := st.Stats()
		if s.Dirty+s.Unsettled+s.Held == 0 && s.Queued == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not settled after 2m: %d dirty, %d unsettled, %d held", s.Dirty, s.Unsettled, s.Held)
		}
		time.Sleep(100 * time.Millisecond) // real processes, real time
	}
	s := st.Stats()
	follower.Close()
	if err := st.Close(ctx); err != nil {
		return err
	}
	if err := follower.Leave(ctx, control.Heartbeat{}); err != nil {
		return err
	}
	var verified uint64
	for _, n := range s.Verifications {
		verified += n
	}
	beat, _ := json.Marshal(tgt.Report(ctx))
	var drops uint64
	for _, d := range s.Drops {
		drops += d
	}
	raw, _ := json.Marshal(fleetStats{
		childStats: childStats{Writes: writes, Confirmed: s.Confirmed, Records: sink.n.Load(), Drops: drops, Cleared: s.Cleared,
			Repaired: s.Repairs[dualwrite.RepairCopied] + s.Repairs[dualwrite.RepairDeleted], Coalesced: s.Coalesced},
		Held: s.Held, Elsewhere: s.ReportedElsewhere, ClaimErrs: s.ClaimErrors, Verified: verified,
		Beats: tgt.beats.Load(), BoardReads: board.reads.Load(), BeatBytes: len(beat),
	})
	say("stats %s", raw)
	return nil
}
