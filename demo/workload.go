package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
)

// modules are the bot's modules, each owning a namespace and a shape of
// records, as miti99bot's do.
var modules = []string{"wordle", "loldle-emoji", "trading", "xo", "misc"}

// keysPerModule keeps the data in the hundreds of documents, where the
// embedded server is quick.
const keysPerModule = 30

// workload drives the store like the bot does, from concurrent workers at a
// bounded rate, and counts what the callers saw.
type workload struct {
	ops, reads, writes, deletes, lists atomic.Int64
	// errs counts errors a caller saw (not-found is an answer, not an
	// error); firstErr keeps the first for the verdict.
	errs     atomic.Int64
	mu       sync.Mutex
	firstErr error
}

func (w *workload) fail(err error) {
	w.errs.Add(1)
	w.mu.Lock()
	if w.firstErr == nil {
		w.firstErr = err
	}
	w.mu.Unlock()
}

func (w *workload) run(ctx context.Context, stores map[string]kv.Store, cfg config) {
	var wg sync.WaitGroup
	interval := time.Duration(float64(time.Second) * float64(cfg.workers) / cfg.rate)
	for i := range cfg.workers {
		r := rand.New(rand.NewPCG(cfg.seed, uint64(i)))
		wg.Go(func() {
			clock.Every(ctx, interval, func() {
				mod := modules[r.IntN(len(modules))]
				w.step(context.WithoutCancel(ctx), stores[mod], mod, r)
			})
		})
	}
	wg.Wait()
}

type record struct {
	Owner   string   `json:"owner"`
	Words   []string `json:"words,omitempty"`
	Score   int      `json:"score"`
	Balance float64  `json:"balance,omitempty"`
	Updated int64    `json:"updated"`
}

// step makes one bot operation: reads dominate, as they do in a chat bot.
func (w *workload) step(ctx context.Context, s kv.Store, mod string, r *rand.Rand) {
	w.ops.Add(1)
	key := fmt.Sprintf("%s:%d", shapes[mod], r.IntN(keysPerModule))
	var err error
	switch p := r.IntN(100); {
	case p < 45:
		w.reads.Add(1)
		var rec record
		_, err = kv.GetJSON(ctx, s, key, &rec)
	case p < 55:
		w.reads.Add(1)
		_, err = s.Get(ctx, key)
		if errors.Is(err, kv.ErrNotFound) {
			err = nil
		}
	case p < 75:
		w.writes.Add(1)
		rec := record{Owner: fmt.Sprintf("user%d", r.IntN(1000)), Score: r.IntN(100), Updated: time.Now().Unix()}
		if mod == "trading" {
			rec.Balance = float64(r.IntN(1_000_000)) / 100
		} else {
			rec.Words = []string{"crane", "slate", "apple"}[:1+r.IntN(3)]
		}
		err = kv.PutJSON(ctx, s, key, rec, kv.PutOptions{})
	case p < 85:
		// Cooldowns and daily puzzles expire. Their TTLs are minutes
		// long: a key whose copy was lost in the outage and that has
		// under a minute to live cannot be copied with its expiry
		// (Workers KV's 60 s minimum), so it stays dirty until it
		// expires, which would only make the demo wait.
		w.writes.Add(1)
		key = fmt.Sprintf("cooldown:%d", r.IntN(keysPerModule/3))
		ttl := 5*time.Minute + time.Duration(r.IntN(600))*time.Second
		err = s.Put(ctx, key, fmt.Appendf(nil, "cooldown until %d", time.Now().Add(ttl).Unix()), kv.PutOptions{TTL: ttl})
	case p < 92:
		w.deletes.Add(1)
		err = s.Delete(ctx, key)
	default:
		w.lists.Add(1)
		err = listAll(ctx, s, shapes[mod]+":")
	}
	if err != nil {
		w.fail(fmt.Errorf("module %s: %w", mod, err))
	}
}

// shapes are the record kinds of each module, as its keys name them.
var shapes = map[string]string{
	"wordle": "games", "loldle-emoji": "daily", "trading": "portfolio",
	"xo": "match", "misc": "settings",
}

// listAll pages to the end, stopping on Done as the contract says.
func listAll(ctx context.Context, s kv.Store, prefix string) error {
	cursor := ""
	for {
		res, err := s.List(ctx, kv.ListOptions{Prefix: prefix, Limit: 10, Cursor: cursor})
		if err != nil {
			return err
		}
		if res.Done {
			return nil
		}
		cursor = res.Cursor
	}
}
