package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/internal/refused"
	"github.com/kvshadow/kvshadow/internal/report/cli"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/service"
	"github.com/kvshadow/kvshadow/service/admin"
	"github.com/kvshadow/kvshadow/tests/command"
	"github.com/kvshadow/kvshadow/tests/mongotest"
	"github.com/kvshadow/kvshadow/tests/proxytest"
)

// A step is one of the guide's steps as the rehearsal runs it: the guide's
// command lines, in order, what else the step does (a deploy of the bot with
// the step's flags, the queue deleted, the proxy stopped), whether bot
// traffic runs after them, and what is checked after the traffic.
type step struct {
	guide    int    // the guide's step number
	name     string // its title, as the guide names it
	commands []string
	do       func(*rig, context.Context) error
	traffic  bool
	check    func(*rig, context.Context) error
}

// plan is the guide's path: every admin call and shadow-report run it
// gives in a command block, as written (TestPlanFollowsTheGuide), the bot's
// deploys with the flags of the guide's table, and the way back from live,
// which the guide gives as its Back lines.
var plan = []step{
	{guide: 5, name: "Add the tee to the bot: first, the bot's own dual write off (DUAL_WRITE=0, the drift-verifier stopped)", do: (*rig).dualWriteOff, traffic: true, check: (*rig).checkDualWriteOff},
	{guide: 5, name: "Add the tee to the bot: then the tee (STORAGE_PRIMARY=kv DUAL_WRITE=0)", do: (*rig).addTee, traffic: true},
	{guide: 6, name: "Backfill", commands: []string{
		"shadow-report --exclude-prefix __retry: --repair",
		"shadow-report --exclude-prefix __retry: --repair --apply --checkpoint backfill.ckpt",
		"shadow-report --exclude-prefix __retry: --out parity.html",
	}, do: (*rig).deleteRetryQueue},
	{guide: 7, name: "Shadow", commands: []string{`adm -X PUT $ADMIN/stage -d '{"stage":"shadow"}'`}, traffic: true},
	{guide: 8, name: "Gate", commands: []string{"shadow-report --exclude-prefix __retry: --min-parity 100% --format json --out gate.json"}},
	{guide: 9, name: "Handover", commands: []string{`adm -X PUT $ADMIN/stage -d '{"stage":"handover"}'`}, traffic: true},
	{guide: 10, name: "Live", commands: []string{`adm -X PUT $ADMIN/stage -d '{"stage":"live"}'`}, traffic: true},
	{guide: 10, name: "Live, the way back", commands: []string{`adm -X PUT $ADMIN/stage -d '{"stage":"handover"}'`, `adm -X PUT $ADMIN/stage -d '{"stage":"shadow"}'`}, traffic: true},
	{guide: 9, name: "Handover again", commands: []string{`adm -X PUT $ADMIN/stage -d '{"stage":"handover"}'`}, traffic: true},
	{guide: 10, name: "Live again", commands: []string{`adm -X PUT $ADMIN/stage -d '{"stage":"live"}'`}, traffic: true},
	{guide: 11, name: "Rampdown", commands: []string{`adm -X PUT $ADMIN/stage -d '{"stage":"rampdown"}'`}, traffic: true},
	{guide: 12, name: "Complete", commands: []string{`adm -X PUT $ADMIN/stage -d '{"stage":"complete","confirm_irreversible":true}'`}, check: (*rig).finalReport},
	{guide: 12, name: "Complete, then the recommended end state: the bot on the proxy through kvshadowBinding (STORAGE_PRIMARY=kv DUAL_WRITE=0)", do: (*rig).onProxy, traffic: true, check: (*rig).checkOnProxy},
	{guide: 13, name: "The bot on its own MongoKVStore, and the proxy retired (STORAGE_PRIMARY=mongo DUAL_WRITE=0)", do: (*rig).ownStore, traffic: true, check: (*rig).checkOwnStore},
	{guide: 14, name: "What to delete at the end", do: (*rig).retire, traffic: true, check: (*rig).checkRetired},
}

// rig is what the rehearsal runs on.
type rig struct {
	out       io.Writer
	start     time.Time
	dir       string
	env       map[string]string // shadow-report's, as an operator exports it
	admin     *admin.Client
	bot       *botProcess
	botVars   map[string]string // what every deploy of the bot has: its secrets, the proxy's URL
	primary   kv.Store          // the binding, through the bridge
	mongoURI  string
	stopProxy func()
	updates   int
	rtt       time.Duration      // -bench's distances
	lease     time.Duration      // how long a tee routes by a stage answer
	seq       int                // the next update's number
	last      map[string]*string // each key's last value the bot wrote (nil: deleted)
	shared    map[string]bool    // keys written from two lanes at once: no one last value
	old       []string           // what Workers KV held before the migration
	ops       uint64             // the proxy's operations when the bot left it
	docs      int64              // the bot's documents in MongoDB when its own dual write went off
	down      string             // where the bot finds MongoDB out of reach: refused, held until the end
}

func (r *rig) say(format string, args ...any) {
	fmt.Fprintf(r.out, "%6.1fs  %s\n", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...))
}

// The files the rehearsal writes in its folder: the guide's reports, kept.
var reportFiles = []string{"parity.html", "gate.json", "final.html"}

const usageText = `usage: rehearse [flags]

Runs the bot team's guide (docs/bot-guide.md) on one machine: a bot with the
real bot's storage shape and flags (createStore over STORAGE_PRIMARY,
DUAL_WRITE and MONGODB_URI, its own DualKVStore and drift-verifier) and the
bridge in workerd (miniflare), kvshadow-proxy in-process over the bridge and
its own embedded MongoDB-compatible server (never MONGODB_URI's: the bot's
code and step 14 use the fixed database miti99bot); from the bot as it runs
today through every stage to complete, then step 13 (the bot on its own
MongoKVStore) and step 14 (the proxy stopped, kvshadow's collections
dropped). The reports (%s) are kept in -dir.

`

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("rehearse", flag.ContinueOnError)
	fs.SetOutput(out)
	updates := fs.Int("updates", 60, "bot updates between two steps")
	workers := fs.String("workers", "", "the workers/ folder (default ../workers from the tests module)")
	dir := fs.String("dir", "", "where the reports and the bot's KV data go, kept at exit (default: a new temporary folder)")
	benchN := fs.Int("bench", 0, "instead of the guide's steps, time N bot calls in each configuration the guide weighs (make bot-bench)")
	rtt := fs.Duration("rtt", 20*time.Millisecond, "with -bench: the round trip from the bot to MongoDB, and to kvshadow-proxy, made by a TCP delay link")
	fence := command.Fence(fs)
	fs.Usage = func() {
		fmt.Fprintf(out, usageText, strings.Join(reportFiles, ", "))
		fs.PrintDefaults()
	}
	if done, err := command.Parse(fs, args); done {
		return err
	}
	if *updates < 8 || *fence < 0 || *benchN < 0 || *rtt < 0 {
		return fmt.Errorf("%w: -updates must be at least 8, and -fence, -bench and -rtt not negative", command.ErrUsage)
	}
	if *workers == "" {
		*workers = filepath.Join("..", "workers")
	}
	if err := prepareDir(dir); err != nil {
		return err
	}
	r := &rig{out: out, start: time.Now(), dir: *dir, updates: *updates, rtt: *rtt, last: map[string]*string{}, shared: map[string]bool{}}
	fmt.Fprintf(out, "kvshadow rehearsal: the bot team's guide (docs/bot-guide.md) on one machine; reports in %s\n", r.dir)

	// Never MONGODB_URI's: two rehearsals would share miti99bot (usageText).
	mongo, err := mongotest.Start(ctx, mongotest.Config{IgnoreEnv: true})
	if err != nil {
		return err
	}
	defer mongo.Close()
	r.mongoURI = mongo.URI()
	r.say("MongoDB (FerretDB, embedded), database miti99bot")

	clientToken, adminToken, bridgeToken, keySecret := proxytest.Token(), proxytest.Token(), proxytest.Token(), proxytest.Token()
	const account, namespace = "rehearsal-account", "rehearsal-kv"
	// The bot learns the proxy's origin before the proxy can start (it
	// needs the bridge's URL): held from now until the proxy serves on it.
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer front.Close()
	listen := front.Addr().String()
	r.botVars = map[string]string{"MONGODB_URI": r.mongoURI, "KVSHADOW_URL": "http://" + listen, "KVSHADOW_TOKEN": clientToken, "KVSHADOW_NAMESPACE": namespace, "KVSHADOW_ACCOUNT": account, "KVSHADOW_SAMPLE": "0.2"}
	var mongoLink *delayLink
	if *benchN > 0 {
		// The benchmark's distances: the bot reaches MongoDB and the proxy
		// through delay links; the proxy reaches MongoDB directly.
		mongoLink, err = startDelayLink(strings.TrimSuffix(strings.TrimPrefix(r.mongoURI, "mongodb://"), "/"), *rtt/2)
		if err != nil {
			return err
		}
		defer mongoLink.close()
		proxyLink, err := startDelayLink(listen, *rtt/2)
		if err != nil {
			return err
		}
		defer proxyLink.close()
		r.botVars["MONGODB_URI"] = "mongodb://" + mongoLink.addr() + "/?directConnection=true"
		r.botVars["KVSHADOW_URL"] = "http://" + proxyLink.addr()
	}
	proxyFlags, lease := command.ProxyFlags(*fence)
	proxyFlags = append(proxyFlags, "--heartbeat-interval", "1s", "--instance", "rehearsal")
	if *fence > 0 { // the tee's stage TTL shortened with its lease
		r.botVars["KVSHADOW_STAGE_TTL_MS"] = fmt.Sprint(lease.Milliseconds())
	}
	r.bot, err = startBot(ctx, *workers, []string{"KVSHADOW_PERSIST=" + filepath.Join(r.dir, "kv"), "KVSHADOW_BRIDGE_TOKEN=" + bridgeToken})
	if err != nil {
		return err
	}
	defer r.bot.Stop()
	var ready struct {
		Bridge string `json:"bridge"`
	}
	if err := r.bot.next(&ready, 3*time.Minute); err != nil {
		return err
	}
	r.say("the bot Worker (kvshadow's re-implementation of the real bot's storage, workers/test/realbot: createStore, DualKVStore, MongoKVStore, drift-verifier) and the bridge Worker in workerd, one KV namespace; bridge at %s", ready.Bridge)
	if r.primary, err = cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: bridgeToken, BaseURL: ready.Bridge, MaxRetries: -1}); err != nil {
		return err
	}
	var release func() error
	if r.down, release, err = refused.Addr(); err != nil {
		return err
	}
	defer release()
	if *benchN == 0 {
		err = r.today(ctx)
	}
	if err != nil {
		return fmt.Errorf("the bot as it runs today: %w", err)
	}

	r.env = map[string]string{
		"CLOUDFLARE_ACCOUNT_ID": account, "CLOUDFLARE_KV_NAMESPACE_ID": namespace, "CLOUDFLARE_API_TOKEN": bridgeToken,
		"CLOUDFLARE_BASE_URL": ready.Bridge, "MONGODB_URI": r.mongoURI, "KVSHADOW_KEY_SECRET": keySecret,
	}
	proxyEnv := map[string]string{"KVSHADOW_TOKEN": clientToken, "KVSHADOW_ADMIN_TOKEN": adminToken}
	for k, v := range r.env {
		proxyEnv[k] = v
	}
	// Step 2 of the guide, on loopback: the bridge as the primary, stage
	// dualwrite before the tee, the bot's queue excluded; miniflare reads
	// its own writes, so no consistency window, and verification every 5 s
	// instead of every minute. The fence keeps its default unless -fence.
	at, stopProxy, err := proxytest.Run(ctx, proxyEnv, io.Discard, proxyFlags, service.WithListener(front))
	if err != nil {
		return err
	}
	r.stopProxy = sync.OnceFunc(func() { _ = stopProxy() })
	r.lease = lease
	defer r.stopProxy()
	r.admin = &admin.Client{URL: at.Admin, Token: adminToken}
	r.say("step 2, Deploy the proxy: kvshadow-proxy --primary-url <bridge> --stage dualwrite --exclude-prefix __retry:; admin API %s", at.Admin)

	if *benchN > 0 {
		return r.bench(ctx, *benchN, mongoLink)
	}
	for _, s := range plan {
		r.say("step %d, %s", s.guide, s.name)
		for _, c := range s.commands {
			r.say("  $ %s", c)
			if err := r.runCommand(ctx, c); err != nil {
				return fmt.Errorf("step %d (%s): %s: %w", s.guide, s.name, c, err)
			}
		}
		for _, f := range []func(*rig, context.Context) error{s.do, trafficIf(s.traffic), s.check} {
			if f == nil {
				continue
			}
			if err := f(r, ctx); err != nil {
				return fmt.Errorf("step %d (%s): %w", s.guide, s.name, err)
			}
		}
	}
	fmt.Fprintf(out, "\nOK: every stage walked, through the handover to live, back and on to complete, with both stores agreeing on every key and no divergence confirmed; then the bot on its own MongoDB store read every key it ever wrote, and kept working with the proxy stopped and kvshadow's collections dropped.\nReports kept in %s: %s\n", r.dir, strings.Join(reportFiles, ", "))
	return nil
}

func trafficIf(on bool) func(*rig, context.Context) error {
	if !on {
		return nil
	}
	return (*rig).traffic
}

// prepareDir makes the rehearsal's folder, a new temporary one by default;
// in a given one it removes what an earlier rehearsal left (its reports,
// its checkpoint, the bot's KV data) and nothing else.
func prepareDir(dir *string) error {
	if *dir == "" {
		d, err := os.MkdirTemp("", "kvshadow-rehearse-")
		*dir = d
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	for _, f := range append([]string{"kv", "backfill.ckpt"}, reportFiles...) {
		if err := os.RemoveAll(filepath.Join(*dir, f)); err != nil {
			return err
		}
	}
	return nil
}

var stageBody = regexp.MustCompile(`\{"stage":"([a-z]+)"(,"confirm_irreversible":true)?\}`)

// runCommand runs one of the guide's command lines.
func (r *rig) runCommand(ctx context.Context, line string) error {
	switch {
	case strings.HasPrefix(line, "adm -X PUT $ADMIN/stage"):
		m := stageBody.FindStringSubmatch(line)
		if m == nil {
			return errors.New("no stage in the command")
		}
		to, err := dualwrite.ParseStage(m[1])
		if err != nil {
			return err
		}
		return r.setStage(ctx, to, m[2] != "")
	case strings.HasPrefix(line, "shadow-report"):
		return r.report(ctx, strings.Fields(line)[1:])
	}
	return fmt.Errorf("the rehearsal does not know this command")
}

// setStage moves the stage as the guide's PUT /stage does, saying each
// reason the proxy holds the flip back once.
func (r *rig) setStage(ctx context.Context, to dualwrite.Stage, confirmed bool) error {
	c, err := command.SetStage(ctx, r.admin, to, confirmed, func(why string) { r.say("    held back: %s", why) })
	if err == nil {
		r.say("    stage %s, generation %d (applied %v)", c.Stage, c.Generation, c.Applied)
	}
	return err
}

// report runs shadow-report with the guide's flags, in a working directory
// of its own, as an operator with the environment above would.
func (r *rig) report(ctx context.Context, args []string) error {
	if err := r.settled(ctx); err != nil {
		return err
	}
	args = append([]string(nil), args...)
	for i := 1; i < len(args); i++ { // the files it writes go to the working directory
		if (args[i-1] == "--out" || args[i-1] == "--checkpoint") && !filepath.IsAbs(args[i]) {
			args[i] = filepath.Join(r.dir, args[i])
		}
	}
	var errOut strings.Builder
	err := cli.Run(ctx, append(args, "--progress", "never"), func(k string) string { return r.env[k] }, io.Discard, &errOut)
	cwdArgs := strings.Join(args, " ")
	verdict := lastLine(errOut.String())
	r.say("    %s", verdict)
	dryRun := strings.Contains(cwdArgs, "--repair") && !strings.Contains(cwdArgs, "--apply")
	if err != nil && !(dryRun && cli.ExitCode(err) == cli.ExitBelowParity) {
		return fmt.Errorf("%w\n%s", err, errOut.String())
	}
	return nil
}

// settled waits, as the guide's operator does before a report, until the
// proxy holds no copy in flight, no dirty key and no key left to verify.
func (r *rig) settled(ctx context.Context) error {
	// The tee sends an invocation's copies 250 ms after its last write,
	// after the bot has answered: a quiet moment lets the last ones land.
	if err := clock.Sleep(ctx, nil, 2*time.Second); err != nil {
		return err
	}
	_, err := command.Settled(ctx, r.admin, 2*time.Minute, nil)
	return err
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// traffic runs a burst of bot updates and says what the proxy counted
// (while there is a proxy).
func (r *rig) traffic(ctx context.Context) error {
	return r.burst(ctx, r.updates)
}

func (r *rig) burst(ctx context.Context, n int) error {
	began := time.Now()
	var done struct {
		Writes      int                `json:"writes"`
		Invocations int                `json:"invocations"`
		Last        map[string]*string `json:"last"`
		Shared      []string           `json:"shared"`
		Fetches     int                `json:"fetches"`
	}
	if err := r.bot.do(map[string]any{"cmd": "go", "from": r.seq, "n": n}, &done, 5*time.Minute); err != nil {
		return err
	}
	r.seq += n
	for k, v := range done.Last {
		if !r.shared[k] {
			r.last[k] = v
		}
	}
	for _, k := range done.Shared {
		r.shared[k] = true
		delete(r.last, k)
	}
	// What an update took, on this machine, four at a time: the binding's
	// latency until handover, the proxy's round trip from then on.
	took := time.Since(began) / time.Duration(max(done.Invocations, 1)) * 4
	line := fmt.Sprintf("    bot: %d updates, %d writes, %s an update, at most %d fetches to kvshadow in one", done.Invocations, done.Writes, took.Round(time.Millisecond), done.Fetches)
	if r.admin == nil {
		r.say("%s", line)
		return nil
	}
	st, err := r.admin.Stats(ctx)
	if err != nil {
		return err
	}
	r.say("%s | proxy: %s", line, command.Counts(st))
	return nil
}

// finalReport settles after complete and checks the stores: a full parity
// report, and no divergence confirmed (none is injected, so any would be
// made up).
func (r *rig) finalReport(ctx context.Context) error {
	r.say("  the stores at complete: a full parity report")
	if err := r.report(ctx, []string{"--exclude-prefix", "__retry:", "--min-parity", "100%", "--out", "final.html"}); err != nil {
		return fmt.Errorf("the final parity report: %w", err)
	}
	st, err := r.admin.Stats(ctx)
	if err != nil {
		return err
	}
	if n := st.Summary.Divergences.Confirmed; n != 0 {
		return fmt.Errorf("%d divergences confirmed, and none was made: the layer reported one of its own making", n)
	}
	r.ops = st.Summary.Operations
	return nil
}
