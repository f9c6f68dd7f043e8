package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// benchRow is one configuration's figures.
type benchRow struct {
	name          string
	p50, p95, avg time.Duration
	fetches       float64 // kvshadow's subrequests a call, on average
	conns         float64 // TCP connections to MongoDB a call opened, on average
	updateFetches float64 // kvshadow's subrequests a bot update, on average
	cronFetches   float64 // kvshadow's subrequests of a scheduled() run
}

// bench measures a typical bot call (getJSON + putJSON, one invocation) in
// workerd in each configuration the guide weighs, n calls each, one at a
// time: MongoDB rtt away from the bot (and from nothing else), and
// kvshadow-proxy rtt away from the bot with MongoDB beside it.
func (r *rig) bench(ctx context.Context, n int, mongoLink *delayLink) error {
	type conf struct {
		name   string
		before func() error
		deploy func() error
	}
	// After a move, every isolate routes by the new stage once its last
	// answer's lease has run out: the figures are taken after that.
	stage := func(to dualwrite.Stage, confirmed bool) func() error {
		return func() error {
			if err := r.setStage(ctx, to, confirmed); err != nil {
				return err
			}
			time.Sleep(r.lease + time.Second)
			return nil
		}
	}
	confs := []conf{
		{"today: the bot's own DualKVStore (kv, DUAL_WRITE=1)", nil, func() error { return r.deployAs("kv", "1", false, nil) }},
		{"the binding alone (kv, DUAL_WRITE=0)", nil, func() error { return r.deployAs("kv", "0", false, nil) }},
		{"the tee, dualwrite (copies after the response)", nil, func() error { return r.deployAs("kv", "0", true, nil) }},
		{"the tee, handover (every call through the proxy, Workers KV behind it)", func() error {
			if err := stage(dualwrite.Shadow, false)(); err != nil {
				return err
			}
			return stage(dualwrite.Handover, false)()
		}, nil},
		{"the tee, live (every call through the proxy, MongoDB behind it)", stage(dualwrite.Live, false), nil},
		{"after complete: kvshadowBinding to the proxy", func() error {
			if err := stage(dualwrite.Rampdown, false)(); err != nil {
				return err
			}
			return stage(dualwrite.Complete, true)()
		}, func() error { return r.deployAs("kv", "0", false, map[string]string{"KVSHADOW_BINDING": "1"}) }},
		{"step 13: its own MongoKVStore, a client per invocation (mongo, DUAL_WRITE=0)", nil, func() error { return r.deployAs("mongo", "0", false, nil) }},
		{"the binding alone, again", nil, func() error { return r.deployAs("kv", "0", false, nil) }},
	}
	var rows []benchRow
	for _, c := range confs {
		r.say("bench: %s", c.name)
		for _, f := range []func() error{c.before, c.deploy} {
			if f != nil {
				if err := f(); err != nil {
					return fmt.Errorf("%s: %w", c.name, err)
				}
			}
		}
		row, err := r.measure(c.name, n, mongoLink)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		rows = append(rows, row)
	}
	fmt.Fprintf(r.out, "\nA bot call (getJSON + putJSON, one invocation), %d calls each, one at a time, in workerd; MongoDB %s from the bot; kvshadow-proxy %s from the bot, MongoDB beside it:\n\n", n, r.rtt, r.rtt)
	fmt.Fprintf(r.out, "| configuration | p50 | p95 | mean | kvshadow subrequests a call | MongoDB connections a call | kvshadow subrequests an update | kvshadow subrequests a scheduled() run |\n|---|---|---|---|---|---|---|---|\n")
	for _, w := range rows {
		fmt.Fprintf(r.out, "| %s | %s | %s | %s | %.1f | %.1f | %.1f | %.1f |\n", w.name, ms(w.p50), ms(w.p95), ms(w.avg), w.fetches, w.conns, w.updateFetches, w.cronFetches)
	}
	return nil
}

// measure warms the configuration up, then times n calls and one burst of
// bot updates.
func (r *rig) measure(name string, n int, mongoLink *delayLink) (benchRow, error) {
	var got struct {
		MS []float64 `json:"ms"`
	}
	if err := r.bot.do(map[string]any{"cmd": "bench", "n": 5}, &got, 5*time.Minute); err != nil {
		return benchRow{}, err
	}
	if _, err := r.subrequests(); err != nil {
		return benchRow{}, err
	}
	before := mongoLink.accepted.Load()
	if err := r.bot.do(map[string]any{"cmd": "bench", "n": n}, &got, 30*time.Minute); err != nil {
		return benchRow{}, err
	}
	conns := mongoLink.accepted.Load() - before
	perCall, err := r.subrequests()
	if err != nil {
		return benchRow{}, err
	}
	if err := r.bot.do(map[string]any{"cmd": "go", "from": r.seq, "n": 16}, &struct{}{}, 5*time.Minute); err != nil {
		return benchRow{}, err
	}
	r.seq += 16
	perUpdate, err := r.subrequests()
	if err != nil {
		return benchRow{}, err
	}
	// The bot's own cron job (a new round), with the one line in scheduled().
	if err := r.bot.do(map[string]any{"cmd": "cron", "cron": "*/5 * * * *"}, &struct{}{}, time.Minute); err != nil {
		return benchRow{}, err
	}
	perCron, err := r.subrequests()
	if err != nil {
		return benchRow{}, err
	}
	d := make([]time.Duration, len(got.MS))
	var sum time.Duration
	for i, v := range got.MS {
		d[i] = time.Duration(v * float64(time.Millisecond))
		sum += d[i]
	}
	slices.Sort(d)
	row := benchRow{name: name, p50: d[len(d)/2], p95: d[len(d)*95/100], avg: sum / time.Duration(len(d)), fetches: perCall, conns: float64(conns) / float64(n), updateFetches: perUpdate, cronFetches: perCron}
	r.say("  p50 %s p95 %s mean %s; kvshadow subrequests %.1f a call, %.1f an update; MongoDB connections %.1f a call", ms(row.p50), ms(row.p95), ms(row.avg), row.fetches, row.updateFetches, row.conns)
	return row, nil
}

func ms(d time.Duration) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)), ".0") + " ms"
}

// subrequests waits for the last invocations' ctx.waitUntil work to end,
// then returns kvshadow's subrequests an invocation since the last call.
func (r *rig) subrequests() (float64, error) {
	time.Sleep(time.Second)
	var t struct {
		Fetches     int `json:"fetches"`
		Invocations int `json:"invocations"`
	}
	if err := r.bot.do(map[string]any{"cmd": "stats"}, &t, time.Minute); err != nil {
		return 0, err
	}
	return float64(t.Fetches) / float64(max(t.Invocations, 1)), nil
}
