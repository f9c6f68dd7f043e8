package dualwrite_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// counted is a memory store with every ability (bulk, expiry, metadata)
// that counts its calls.
type counted struct {
	*memory.Store
	gets, values, bulkGets, puts, bulkPuts, deletes, bulkDeletes atomic.Int64
}

func (c *counted) Get(ctx context.Context, k string) ([]byte, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, k)
}

func (c *counted) GetEntry(ctx context.Context, k string) (kv.Entry, error) {
	c.gets.Add(1)
	return c.Store.GetEntry(ctx, k)
}

func (c *counted) GetValue(ctx context.Context, k string) (kv.Entry, error) {
	c.values.Add(1)
	return c.Store.GetValue(ctx, k)
}

func (c *counted) GetMany(ctx context.Context, keys []string) ([]kv.Entry, error) {
	c.bulkGets.Add(1)
	return c.Store.GetMany(ctx, keys)
}

func (c *counted) Put(ctx context.Context, k string, v []byte, o kv.PutOptions) error {
	c.puts.Add(1)
	return c.Store.Put(ctx, k, v, o)
}

func (c *counted) PutEntry(ctx context.Context, e kv.Entry) error {
	c.puts.Add(1)
	return c.Store.PutEntry(ctx, e)
}

func (c *counted) PutMany(ctx context.Context, es []kv.Entry) error {
	c.bulkPuts.Add(1)
	return c.Store.PutMany(ctx, es)
}

func (c *counted) Delete(ctx context.Context, k string) error {
	c.deletes.Add(1)
	return c.Store.Delete(ctx, k)
}

func (c *counted) DeleteMany(ctx context.Context, keys []string) error {
	c.bulkDeletes.Add(1)
	return c.Store.DeleteMany(ctx, keys)
}

func (c *counted) requests() int64 {
	return c.gets.Load() + c.values.Load() + c.bulkGets.Load() + c.puts.Load() + c.bulkPuts.Load() + c.deletes.Load() + c.bulkDeletes.Load()
}

// pair is a dual-write store over two counted memory stores on a fake
// clock.
type pair struct {
	t               *testing.T
	clk             *clock.Fake
	primary, shadow *counted
	store           *dualwrite.Store
	sink            *sinkRecorder
	logs            lockedBuffer // the Store's warnings, one line each
}

// lockedBuffer is an io.Writer that goroutines share.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the lines written that contain s.
func (l *lockedBuffer) lines(s string) (out []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

const window = time.Minute

func newPair(t *testing.T, cfg dualwrite.Config) *pair {
	t.Helper()
	return newPairOn(t, clock.NewFake(start), cfg)
}

func newPairOn(t *testing.T, clk *clock.Fake, cfg dualwrite.Config) *pair {
	t.Helper()
	p := &pair{t: t, clk: clk, sink: &sinkRecorder{}}
	p.primary = &counted{Store: memory.New(memory.Config{Clock: p.clk})}
	p.shadow = &counted{Store: memory.New(memory.Config{Clock: p.clk})}
	p.open(cfg)
	return p
}

// open starts a Store over p's stores: New again on the same stores is a
// restart.
func (p *pair) open(cfg dualwrite.Config) {
	p.t.Helper()
	cfg.Primary, cfg.Shadow = p.primary, p.shadow
	if cfg.ConsistencyWindow == 0 {
		cfg.ConsistencyWindow = window
	}
	if cfg.FenceInterval == 0 {
		cfg.FenceInterval = -1 // the fence's tests set one
	}
	if cfg.RepairInterval == 0 {
		cfg.RepairInterval = never
	}
	if cfg.Sink == nil {
		cfg.Sink = p.sink
	}
	s, err := dualwrite.New(cfg, dualwrite.WithClock(p.clk), dualwrite.WithLogger(slog.New(slog.NewTextHandler(&p.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	if err != nil {
		p.t.Fatal(err)
	}
	p.store = s
	p.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			p.t.Errorf("Close: %v", err)
		}
	})
}

func (p *pair) flush() {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(p.t, p.store.Flush(ctx))
}

// settle moves the clock past the window and runs one verification pass.
func (p *pair) settle() int {
	p.t.Helper()
	p.flush()
	p.clk.Advance(window)
	n, err := p.store.Settle(context.Background())
	must(p.t, err)
	p.flush()
	return n
}
