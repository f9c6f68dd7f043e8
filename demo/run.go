package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/internal/telemetry"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvfault"
	"github.com/kvshadow/kvshadow/service/admin"
)

// run is the whole demo; it returns an error when any guarantee failed.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
		return err
	}
	tel, err := telemetry.Setup(ctx, telemetry.Config{ServiceName: "kvshadow-demo", Console: stderr})
	if err != nil {
		return err
	}
	tel.SetGlobal()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tel.Shutdown(sctx)
	}()

	say := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }
	say("kvshadow demo: Workers KV -> MongoDB, %s of bot traffic at %.0f ops/s from %d workers", cfg.duration, cfg.rate, cfg.workers)
	srv, err := startServers(ctx, cfg)
	if err != nil {
		return fmt.Errorf("start servers: %w", err)
	}
	defer srv.Close()
	say("  Workers KV emulator  %s  (latency %s, consistency window %s)", srv.baseURL, cfg.latency, cfg.window)
	say("  MongoDB (FerretDB)   %s  (database %s, data in %s)", "127.0.0.1 (embedded)", database, filepath.Join(cfg.dir, "mongo"))

	botKV, err := srv.workersKV(true)
	if err != nil {
		return err
	}
	directKV, err := srv.workersKV(false)
	if err != nil {
		return err
	}
	mongo, err := srv.mongoDB()
	if err != nil {
		return err
	}
	if err := mongo.Put(ctx, "misc:demo:ready", []byte("1"), kv.PutOptions{}); err != nil {
		return fmt.Errorf("mongodb not ready: %w", err)
	}
	if err := mongo.Delete(ctx, "misc:demo:ready"); err != nil {
		return err
	}
	// The shadow the layer sees can be taken down, as a paused cluster or
	// a network partition would.
	shadow, err := kvfault.New(mongo, kvfault.Config{Name: "mongodb"})
	if err != nil {
		return err
	}
	red, err := compare.NewRedactor(compare.KeyHMAC, []byte(keySecret))
	if err != nil {
		return err
	}
	// The layer's warnings are told as the story's events.
	w := &workload{}
	st := &status{out: stdout, work: w, start: time.Now()}
	px, err := startProxy(ctx, cfg, srv, botKV, shadow, slog.New(logHandler{s: st}))
	if err != nil {
		return err
	}
	st.dual = px
	defer px.stop() // once: the stop below says how it went
	say("  kvshadow-proxy       %s  (the bot's cloudflare-go client goes through it; admin API %s)", px.api, px.admin)
	botClient, err := px.botClient()
	if err != nil {
		return err
	}
	stores := map[string]kv.Store{}
	for _, m := range modules {
		if stores[m], err = kv.Namespace(botClient, m); err != nil {
			return err
		}
	}

	// The workload and the status line run until the timeline ends.
	wctx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	var wg sync.WaitGroup
	st.start = time.Now()
	wg.Go(func() { w.run(wctx, stores, cfg) })
	sctx, stopStatus := context.WithCancel(ctx)
	var sg sync.WaitGroup
	sg.Go(func() { st.loop(sctx) })

	d := &demo{cfg: cfg, out: stdout, px: px, shadow: shadow, primary: directKV, mongo: mongo, st: st, work: w, red: red}
	err = d.timeline(wctx)
	stopWork()
	wg.Wait()
	if err == nil {
		st.event("workload stopped after %d operations; draining the lanes and repairing what is dirty", w.ops.Load())
		err = settle(ctx, px, cfg)
	}
	stopStatus()
	sg.Wait()
	st.print()
	if err != nil {
		return err
	}
	stats := px.Stats()
	if err := px.stop(); err != nil {
		return fmt.Errorf("stop kvshadow-proxy: %w", err)
	}
	return d.verdict(ctx, stats)
}

// demo is the running demo's parts, for its timeline and its verdict.
type demo struct {
	cfg            config
	out            io.Writer
	px             *proxy
	shadow         *kvfault.Store // the shadow as the layer sees it, which the outage takes down
	primary, mongo kv.Store       // Workers KV and MongoDB, reached around the layer
	st             *status
	work           *workload
	red            *compare.Redactor
}

// timeline walks the stages and the outage while the workload runs.
func (d *demo) timeline(ctx context.Context) error {
	cfg, px, shadow, primary, mongo, st := d.cfg, d.px, d.shadow, d.primary, d.mongo, d.st
	at := func(share float64) error {
		return pause(ctx, time.Until(st.start.Add(time.Duration(share*float64(cfg.duration)))))
	}
	st.event("stage dualwrite: every write goes to Workers KV, then is copied to MongoDB")
	if err := at(0.15); err != nil {
		return err
	}
	if err := walk(ctx, px, st, move{dualwrite.Shadow, "stage shadow: reads are compared with MongoDB for 25% of the keys"}); err != nil {
		return err
	}
	if err := at(0.3); err != nil {
		return err
	}
	st.outage.Store(true)
	shadow.SetOutage(true)
	st.event("MongoDB is down (planned): copies fail, the breaker will open and keys are marked dirty")
	if err := at(0.45); err != nil {
		return err
	}
	shadow.SetOutage(false)
	st.outage.Store(false)
	st.event("MongoDB is back: the breaker probes, closes, and repair copies the dirty keys")
	if err := at(0.55); err != nil {
		return err
	}
	// The flip, under traffic, and the way back.
	if err := walk(ctx, px, st,
		move{dualwrite.Handover, "stage handover: Workers KV still authoritative; the flip is fenced from here (no tee in this demo: the bot goes through the proxy)"},
		move{dualwrite.Live, "stage live: MongoDB is authoritative; the bot reads MongoDB, writes go to MongoDB, then to Workers KV"},
	); err != nil {
		return err
	}
	// The flip waits for the outage's dirty keys to be repaired, so live
	// gets a span of its own from the moment it began.
	if err := pause(ctx, cfg.duration/8); err != nil {
		return err
	}
	if err := walk(ctx, px, st,
		move{dualwrite.Handover, "stage handover: the way back; Workers KV authoritative again, every lane drained first"},
		move{dualwrite.Shadow, "stage shadow: back where the flip started"},
	); err != nil {
		return err
	}
	if err := at(0.8); err != nil {
		return err
	}
	if err := pause(ctx, cfg.duration/20); err != nil {
		return err
	}
	if err := inject(context.WithoutCancel(ctx), primary, mongo); err != nil {
		return err
	}
	st.event("injected %d divergences around the layer (the report must find exactly these):", len(injections))
	for _, in := range injections {
		st.event("    %-28s %s", in.key, in.kind)
	}
	return at(1)
}

// move is one step of the stage machine and what the demo says of it.
type move struct {
	to   dualwrite.Stage
	what string
}

func walk(ctx context.Context, px *proxy, st *status, moves ...move) error {
	for _, m := range moves {
		if err := flip(ctx, px, st, m.to, m.what); err != nil {
			return err
		}
	}
	return nil
}

// flip moves the stage; one the proxy holds back (409: dirty keys left by
// the outage, lanes not drained) is said once, repaired and asked again,
// as an operator would after reading GET /stage.
func flip(ctx context.Context, px *proxy, st *status, to dualwrite.Stage, what string) error {
	said := false
	for {
		_, err := px.client.SetStage(ctx, to)
		var refused *admin.Error
		switch {
		case err == nil:
			st.event("%s", what)
			if to == dualwrite.Live || to == dualwrite.Shadow && st.flips.Load() > 0 {
				st.flips.Add(1)
			}
			return nil
		case !errors.As(err, &refused) || refused.Status != http.StatusConflict:
			return err
		case !said:
			st.event("the move to %s is held back (expected: it waits for every key to be clean): %s", to, refused.Message)
			said = true
		}
		if err := px.repair(ctx); err != nil {
			return err
		}
		if err := pause(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
}

// settle waits until the proxy's lanes are drained and no key is dirty,
// asking for repairs meanwhile.
func settle(ctx context.Context, px *proxy, cfg config) error {
	deadline := time.Now().Add(time.Minute + 3*cfg.window)
	for {
		if st := px.Stats(); st.Dirty == 0 && st.Queued == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d keys still dirty after repair", px.Stats().Dirty)
		}
		if err := px.repair(ctx); err != nil {
			return err
		}
		if err := pause(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
}

var errVerdict = errors.New("the demo did not behave as designed")

func pause(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, nil, d) }
