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
	ShadowURL string        `json:"shadow_url"` // a REST API server as the shadow; empty: MongoDB
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
	// NewKeys makes every write a put of a key never written before, in
	// bursts of Burst separated by pauses of Pause (a burst line is
	// printed as each begins); Rate is then the rate inside a burst.
	NewKeys bool          `json:"new_keys"`
	Burst   time.Duration `json:"burst"`
	Pause   time.Duration `json:"pause"`
	// Fleet, when set, makes the process a fleet writer (fleetChild).
	Fleet *fleetConfig `json:"fleet,omitempty"`
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
	switch {
	case c.Emulator:
		run = emulator
	case c.Fleet != nil:
		run = fleetChild
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

// connsPath is where the emulator's check listener answers how many
// connections its writers' listener has open.
const connsPath = "/settle-test/conns"

// emulator serves the REST API over memory until killed, so that the
// primary runs outside the test process (and its race detector). It
// listens twice: writer processes use the first, the test the second,
// which also answers connsPath, so that after a kill the test can wait
// until every request the dead writer had sent has been served.
func emulator(childConfig) error {
	api, err := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{namespace: memory.New(memory.Config{})}, AccountID: account, Token: token})
	if err != nil {
		return err
	}
	writers, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	checks, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var open atomic.Int64
	ws := &http.Server{Handler: api, ConnState: func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}}
	mux := http.NewServeMux()
	mux.Handle("/", api)
	mux.HandleFunc(connsPath, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, open.Load()) })
	cs := &http.Server{Handler: mux}
	go func() { _ = cs.Serve(checks) }()
	say("listen http://%s/client/v4/ http://%s", writers.Addr(), checks.Addr())
	return ws.Serve(writers)
}

// openStores opens the primary (cfkv over the REST API server) and the
// shadow, as every process of these tests does: mongokv, or, when
// shadowURL is set, cfkv over a second REST API server.
func openStores(ctx context.Context, baseURL, shadowURL, uri, db string) (*cfkv.Store, kv.Store, func(), error) {
	primary, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: token, BaseURL: baseURL})
	if err != nil {
		return nil, nil, nil, err
	}
	if shadowURL != "" {
		shadow, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: token, BaseURL: shadowURL})
		return primary, shadow, func() {}, err
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

// openWriterStores opens what a writer process writes through: the
// primary, the shadow slowed by c's latency, and c's journal; done closes
// them.
func openWriterStores(ctx context.Context, c childConfig) (primary *cfkv.Store, shadow kv.Store, j *journal.Journal, done func(), err error) {
	primary, inner, closeStores, err := openStores(ctx, c.BaseURL, c.ShadowURL, c.MongoURI, c.MongoDB)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	shadow, err = kvfault.New(inner, kvfault.Config{Name: "shadow", Latency: c.Latency, Jitter: c.Jitter, RealLatency: true, Seed: uint64(len(c.ID))})
	if err == nil {
		j, err = journal.Open(c.Journal, journal.Options{})
	}
	if err != nil {
		closeStores()
		return nil, nil, nil, nil, err
	}
	return primary, shadow, j, func() { _ = j.Close(); closeStores() }, nil
}

// paced runs 8 writers that call op at c.Rate a second between them, each
// with its own random source, until stop, which returns how many of op's
// calls said they wrote.
func paced(c childConfig, op func(rng *rand.Rand, w, i int) (wrote bool)) (stop func() int64) {
	const writers = 8
	period := time.Duration(float64(time.Second) * writers / float64(c.Rate))
	var writes atomic.Int64
	var stopped atomic.Bool
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), uint64(len(c.ID))*7919+uint64(c.ID[0])))
			next := time.Now()
			for i := 0; !stopped.Load(); i++ {
				if d := time.Until(next); d > 0 {
					time.Sleep(d) // pacing a real process at a steady rate
				}
				next = next.Add(period)
				if op(rng, w, i) {
					writes.Add(1)
				}
			}
		})
	}
	return func() int64 {
		stopped.Store(true)
		wg.Wait()
		return writes.Load()
	}
}

func child(c childConfig) error {
	ctx := context.Background()
	primary, shadow, j, done, err := openWriterStores(ctx, c)
	if err != nil {
		return err
	}
	defer done()
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

	if c.NewKeys {
		return burster(ctx, c, st)
	}
	began := time.Now()
	stop := paced(c, func(rng *rand.Rand, w, i int) bool {
		k := "wordle:hot" + strconv.Itoa(rng.IntN(c.Keys))
		var err error
		switch r := rng.Float64(); {
		case r < c.ReadShare:
			if _, err = st.Get(ctx, k); err != nil && !isNotFound(err) {
				say("error %v", err)
			}
			return false
		case r < c.ReadShare+0.1:
			err = st.Delete(ctx, k)
		default:
			err = st.Put(ctx, k, fmt.Appendf(nil, "%s-%d-%d", c.ID, w, i), kv.PutOptions{})
		}
		if err != nil {
			say("error %v", err)
			return false
		}
		say("ack %s", k)
		return true
	})
	if c.Duration == 0 {
		select {} // until killed
	}
	time.Sleep(c.Duration)
	writes := stop()
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
		Writes: writes, Rate: float64(writes) / elapsed.Seconds(),
		Suspected: s.Comparisons[compare.Suspected] + s.Verifications[compare.Suspected],
		Cleared:   s.Cleared, Confirmed: s.Confirmed, Records: sink.n.Load(), Coalesced: s.Coalesced, Drops: drops,
		Repaired: s.Repairs[dualwrite.RepairCopied] + s.Repairs[dualwrite.RepairDeleted],
		Dirty:    s.Dirty, Unsettled: s.Unsettled, Commits: s.JournalCommits, JournalKeys: n,
	})
	say("stats %s", raw)
	return nil
}

// burster writes keys it never wrote before, in bursts, until killed:
// every write is a key entering the settle set, whose mark the journal
// must keep from before the write reaches the primary. Each write is said
// ("ack") once the Store returned.
func burster(ctx context.Context, c childConfig, st *dualwrite.Store) error {
	const writers = 16
	period := time.Duration(float64(time.Second) * writers / float64(c.Rate))
	var burst atomic.Int64 // the burst under way; 0 in a pause
	for w := range writers {
		go func() {
			next := time.Now()
			for i := 0; ; i++ {
				b := burst.Load()
				if b == 0 {
					time.Sleep(time.Millisecond) // a pause: real processes, real time
					next = time.Now()
					continue
				}
				if d := time.Until(next); d > 0 {
					time.Sleep(d) // pacing a real process at a steady rate
				}
				next = next.Add(period)
				k := fmt.Sprintf("wordle:new-%s-%d-%d-%d", c.ID, b, w, i)
				if err := st.Put(ctx, k, fmt.Appendf(nil, "v%d", i), kv.PutOptions{}); err != nil {
					say("error %v", err)
					continue
				}
				say("ack %s", k)
			}
		}()
	}
	for b := int64(1); ; b++ {
		say("burst %d", b)
		burst.Store(b)
		time.Sleep(c.Burst)
		burst.Store(0)
		time.Sleep(c.Pause)
	}
}
