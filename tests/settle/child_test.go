package settle_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/journal"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvfault"
	"github.com/kvshadow/kvshadow/kvapi"
)

// childEnv marks a writer process; the other variables configure it.
const childEnv = "KVSHADOW_SETTLE_CHILD"

// childConfig is what a writer process is told.
type childConfig struct {
	// Emulator makes the process the primary instead: the Workers KV
	// REST API server over memory, on a loopback port it prints.
	Emulator  bool          `json:"emulator"`
	ID        string        `json:"id"`
	BaseURL   string        `json:"base_url"`
	MongoURI  string        `json:"mongo_uri"`
	MongoDB   string        `json:"mongo_db"`
	Journal   string        `json:"journal"`
	Rate      int           `json:"rate"`     // writes per second, all writers together
	Keys      int           `json:"keys"`     // the key space
	Duration  time.Duration `json:"duration"` // 0: write until killed
	Latency   time.Duration `json:"latency"`  // the shadow's added latency
	Jitter    time.Duration `json:"jitter"`
	Window    time.Duration `json:"window"`
	Lanes     int           `json:"lanes"`
	ReadShare float64       `json:"read_share"` // share of operations that are reads, compared
}

// childStats is what a writer that ran to the end prints.
type childStats struct {
	Writes      int64   `json:"writes"`
	Rate        float64 `json:"rate"`
	Suspected   uint64  `json:"suspected"`
	Cleared     uint64  `json:"cleared"`
	Confirmed   uint64  `json:"confirmed"`
	Records     int64   `json:"records"`
	Coalesced   uint64  `json:"coalesced"`
	Drops       uint64  `json:"drops"`
	Repaired    uint64  `json:"repaired"`
	Dirty       int     `json:"dirty"`
	Unsettled   int     `json:"unsettled"`
	Commits     uint64  `json:"commits"`
	JournalKeys int     `json:"journal_keys"`
}

func isNotFound(err error) bool { return errors.Is(err, kv.ErrNotFound) }

type countSink struct{ n atomic.Int64 }

func (c *countSink) Divergence(context.Context, compare.Record) { c.n.Add(1) }

// out serializes the lines a writer prints: each is one write(2), which a
// SIGKILL cannot cut in half.
var out sync.Mutex

func say(format string, args ...any) {
	line := fmt.Sprintf(format+"\n", args...)
	out.Lock()
	_, _ = io.WriteString(os.Stdout, line)
	out.Unlock()
}

func runChild() int {
	var c childConfig
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &c); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		return 2
	}
	run := child
	if c.Emulator {
		run = emulator
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// waitSettled waits until st's settle set is empty and its lanes idle.
func waitSettled(st *dualwrite.Store, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		s := st.Stats()
		if s.Dirty+s.Unsettled == 0 && s.Queued == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not settled after %s: %d dirty, %d unsettled", within, s.Dirty, s.Unsettled)
		}
		time.Sleep(100 * time.Millisecond) // real processes, real time
	}
}

// emulator serves the REST API over memory until killed, so that the
// primary runs outside the test process (and its race detector).
func emulator(childConfig) error {
	api, err := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{namespace: memory.New(memory.Config{})}, AccountID: account, Token: token})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	say("listen http://%s/client/v4/", ln.Addr())
	return http.Serve(ln, api)
}

// openStores opens the primary (cfkv over the REST API server) and the
// shadow (mongokv) as every process of these tests does.
func openStores(ctx context.Context, baseURL, uri, db string) (*cfkv.Store, *mongokv.Store, func(), error) {
	primary, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: token, BaseURL: baseURL})
	if err != nil {
		return nil, nil, nil, err
	}
	client, err := mongokv.NewClient(mongokv.ClientConfig{URI: uri})
	if err != nil {
		return nil, nil, nil, err
	}
	shadow, err := client.Store(mongokv.Config{Database: db})
	if err != nil {
		return nil, nil, nil, err
	}
	return primary, shadow, func() { _ = client.Close(ctx) }, nil
}

func child(c childConfig) error {
	ctx := context.Background()
	primary, mongo, done, err := openStores(ctx, c.BaseURL, c.MongoURI, c.MongoDB)
	if err != nil {
		return err
	}
	defer done()
	shadow, err := kvfault.New(mongo, kvfault.Config{Name: "shadow", Latency: c.Latency, Jitter: c.Jitter, RealLatency: true, Seed: uint64(len(c.ID))})
	if err != nil {
		return err
	}
	j, err := journal.Open(c.Journal, journal.Options{})
	if err != nil {
		return err
	}
	defer j.Close()
	sink := &countSink{}
	st, err := dualwrite.New(dualwrite.Config{
		Primary: primary, Shadow: shadow, Stage: dualwrite.Shadow, CompareRate: 1,
		ConsistencyWindow: c.Window, RepairInterval: c.Window / 4, Lanes: c.Lanes,
		Journal: j, Sink: sink, Breaker: dualwrite.BreakerConfig{FailuresToOpen: 1000},
	}, dualwrite.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	if err != nil {
		return err
	}
	say("ready")

	const writers = 8
	period := time.Duration(float64(time.Second) * writers / float64(c.Rate))
	var writes atomic.Int64
	var stop atomic.Bool
	began := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), uint64(len(c.ID))*7919+uint64(c.ID[0])))
			next := time.Now()
			for i := 0; !stop.Load(); i++ {
				if d := time.Until(next); d > 0 {
					time.Sleep(d) // pacing a real process at a steady rate
				}
				next = next.Add(period)
				k := "wordle:hot" + strconv.Itoa(rng.IntN(c.Keys))
				var err error
				switch r := rng.Float64(); {
				case r < c.ReadShare:
					if _, err = st.Get(ctx, k); err != nil && !isNotFound(err) {
						say("error %v", err)
					}
					continue
				case r < c.ReadShare+0.1:
					err = st.Delete(ctx, k)
				default:
					err = st.Put(ctx, k, fmt.Appendf(nil, "%s-%d-%d", c.ID, w, i), kv.PutOptions{})
				}
				if err != nil {
					say("error %v", err)
					continue
				}
				writes.Add(1)
				say("ack %s", k)
			}
		})
	}
	if c.Duration == 0 {
		select {} // until killed
	}
	time.Sleep(c.Duration)
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(began)

	// Settle: every key this process wrote is verified equal in both
	// stores, or repaired and verified, before it leaves.
	if err := waitSettled(st, 2*time.Minute); err != nil {
		return err
	}
	s := st.Stats()
	if err := st.Close(ctx); err != nil {
		return err
	}
	n, err := j.Len()
	if err != nil {
		return err
	}
	var drops uint64
	for _, d := range s.Drops {
		drops += d
	}
	raw, _ := json.Marshal(childStats{
		Writes: writes.Load(), Rate: float64(writes.Load()) / elapsed.Seconds(),
		Suspected: s.Comparisons[compare.Suspected] + s.Verifications[compare.Suspected],
		Cleared:   s.Cleared, Confirmed: s.Confirmed, Records: sink.n.Load(), Coalesced: s.Coalesced, Drops: drops,
		Repaired: s.Repairs[dualwrite.RepairCopied] + s.Repairs[dualwrite.RepairDeleted],
		Dirty:    s.Dirty, Unsettled: s.Unsettled, Commits: s.JournalCommits, JournalKeys: n,
	})
	say("stats %s", raw)
	return nil
}
