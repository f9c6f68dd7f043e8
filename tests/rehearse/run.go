package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/internal/report/cli"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/service"
	"github.com/kvshadow/kvshadow/service/admin"
	"github.com/kvshadow/kvshadow/tests/mongotest"
)

// A step is one of the guide's steps as the rehearsal runs it: the guide's
// command lines, in order, and whether bot traffic runs after them.
type step struct {
	guide    int    // the guide's step number
	name     string // its title, as the guide names it
	commands []string
	traffic  bool
}

// plan is the guide's path: every admin call and shadow-report run it
// gives in a command block, as written (TestPlanFollowsTheGuide), and the
// way back from live, which the guide gives as its Back lines.
var plan = []step{
	{5, "Add the tee to the bot", nil, true},
	{6, "Backfill", []string{
		"shadow-report --exclude-prefix __retry: --repair",
		"shadow-report --exclude-prefix __retry: --repair --apply --checkpoint backfill.ckpt",
		"shadow-report --exclude-prefix __retry: --out parity.html",
	}, false},
	{7, "Shadow", []string{`adm -X PUT $ADMIN/stage -d '{"stage":"shadow"}'`}, true},
	{8, "Gate", []string{"shadow-report --exclude-prefix __retry: --min-parity 100% --format json --out gate.json"}, false},
	{9, "Handover", []string{`adm -X PUT $ADMIN/stage -d '{"stage":"handover"}'`}, true},
	{10, "Live", []string{`adm -X PUT $ADMIN/stage -d '{"stage":"live"}'`}, true},
	{10, "Live, the way back", []string{`adm -X PUT $ADMIN/stage -d '{"stage":"handover"}'`, `adm -X PUT $ADMIN/stage -d '{"stage":"shadow"}'`}, true},
	{9, "Handover again", []string{`adm -X PUT $ADMIN/stage -d '{"stage":"handover"}'`}, true},
	{10, "Live again", []string{`adm -X PUT $ADMIN/stage -d '{"stage":"live"}'`}, true},
	{11, "Rampdown", []string{`adm -X PUT $ADMIN/stage -d '{"stage":"rampdown"}'`}, true},
	{12, "Complete", []string{`adm -X PUT $ADMIN/stage -d '{"stage":"complete"}'`}, false},
}

// rig is what the rehearsal runs on.
type rig struct {
	out     io.Writer
	start   time.Time
	dir     string
	env     map[string]string // shadow-report's, as an operator exports it
	admin   *admin.Client
	bot     *botProcess
	primary kv.Store // the binding, through the bridge
	updates int
}

func (r *rig) say(format string, args ...any) {
	fmt.Fprintf(r.out, "%6.1fs  %s\n", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("rehearse", flag.ContinueOnError)
	updates := fs.Int("updates", 60, "bot updates between two steps")
	workers := fs.String("workers", "", "the workers/ folder (default ../workers from the tests module)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *workers == "" {
		*workers = filepath.Join("..", "workers")
	}
	dir, err := os.MkdirTemp("", "kvshadow-rehearse-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r := &rig{out: out, start: time.Now(), dir: dir, updates: *updates}
	fmt.Fprintf(out, "kvshadow rehearsal: the bot team's guide (docs/bot-guide.md) on one machine\n")

	mongo, err := mongotest.Start(ctx, mongotest.Config{})
	if err != nil {
		return err
	}
	defer mongo.Close()
	r.say("MongoDB (FerretDB, embedded), database miti99bot")

	clientToken, adminToken, bridgeToken, keySecret := token(), token(), token(), token()
	const account, namespace = "rehearsal-account", "rehearsal-kv"
	listen, err := freePort()
	if err != nil {
		return err
	}
	r.bot, err = startBot(ctx, *workers, []string{
		"KVSHADOW_MODE=tee", "KVSHADOW_URL=http://" + listen, "KVSHADOW_TOKEN=" + clientToken,
		"KVSHADOW_NAMESPACE=" + namespace, "KVSHADOW_BRIDGE_TOKEN=" + bridgeToken, "KVSHADOW_UPDATES=" + fmt.Sprint(*updates),
	})
	if err != nil {
		return err
	}
	defer r.bot.stop()
	var ready struct {
		Bridge string `json:"bridge"`
	}
	if err := r.bot.next(&ready, 3*time.Minute); err != nil {
		return err
	}
	r.say("the bot Worker (tee mode) and the bridge Worker in workerd, one KV namespace; bridge at %s", ready.Bridge)
	if r.primary, err = cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: bridgeToken, BaseURL: ready.Bridge, MaxRetries: -1}); err != nil {
		return err
	}
	// What Workers KV held before the migration: the backfill's work.
	for i := range 30 {
		if err := r.primary.Put(ctx, fmt.Sprintf("wordle:stats:old%02d", i), []byte(fmt.Sprintf(`{"played":%d}`, i)), kv.PutOptions{}); err != nil {
			return fmt.Errorf("seeding Workers KV: %w", err)
		}
	}
	r.say("Workers KV holds 30 keys from before the migration")

	r.env = map[string]string{
		"CLOUDFLARE_ACCOUNT_ID": account, "CLOUDFLARE_KV_NAMESPACE_ID": namespace, "CLOUDFLARE_API_TOKEN": bridgeToken,
		"CLOUDFLARE_BASE_URL": ready.Bridge, "MONGODB_URI": mongo.URI(), "KVSHADOW_KEY_SECRET": keySecret,
	}
	proxyEnv := map[string]string{"KVSHADOW_TOKEN": clientToken, "KVSHADOW_ADMIN_TOKEN": adminToken}
	for k, v := range r.env {
		proxyEnv[k] = v
	}
	// Step 2 of the guide, on loopback: the bridge as the primary, stage
	// dualwrite before the tee; miniflare reads its own writes, so no
	// consistency window, and verification every 5 s instead of every
	// minute. The fence keeps its default: the tee's lease is the real one.
	adminURL, stopProxy, err := startProxy(ctx, proxyEnv, "--listen", listen, "--admin-listen", "127.0.0.1:0",
		"--stage", "dualwrite", "--consistency-window", "0", "--repair-interval", "5s", "--poll-interval", "500ms", "--heartbeat-interval", "1s", "--instance", "rehearsal")
	if err != nil {
		return err
	}
	defer stopProxy()
	r.admin = &admin.Client{URL: adminURL, Token: adminToken}
	r.say("step 2, Deploy the proxy: kvshadow-proxy --primary-url <bridge> --stage dualwrite; admin API %s", adminURL)

	for _, s := range plan {
		r.say("step %d, %s", s.guide, s.name)
		for _, c := range s.commands {
			r.say("  $ %s", c)
			if err := r.runCommand(ctx, c); err != nil {
				return fmt.Errorf("step %d (%s): %s: %w", s.guide, s.name, c, err)
			}
		}
		if s.traffic {
			if err := r.traffic(ctx); err != nil {
				return fmt.Errorf("step %d (%s): %w", s.guide, s.name, err)
			}
		}
	}
	return r.verdict(ctx)
}

var (
	stageBody = regexp.MustCompile(`\{"stage":"([a-z]+)"\}`)
	digits    = regexp.MustCompile(`[0-9]+`)
)

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
		return r.setStage(ctx, to)
	case strings.HasPrefix(line, "shadow-report"):
		return r.report(ctx, strings.Fields(line)[1:])
	}
	return fmt.Errorf("the rehearsal does not know this command")
}

// setStage moves the stage as PUT /stage does; a flip the proxy holds back
// (409: the fence, lanes, dirty keys) is said and asked again, as an
// operator would after reading GET /stage, for at most five minutes.
func (r *rig) setStage(ctx context.Context, to dualwrite.Stage) error {
	deadline := time.Now().Add(5 * time.Minute)
	said := ""
	for {
		c, err := r.admin.SetStage(ctx, to)
		var refused *admin.Error
		switch {
		case err == nil:
			r.say("    stage %s, generation %d (applied %v)", c.Stage, c.Generation, c.Applied)
			return r.awaitStage(ctx, to)
		case errors.As(err, &refused) && refused.Status == 409 && time.Now().Before(deadline):
			// Said once per reason, not once per second of its countdown.
			if why := digits.ReplaceAllString(refused.Message, "N"); why != said {
				r.say("    held back: %s", refused.Message)
				said = why
			}
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// awaitStage waits until the instance runs the stage it was asked for.
func (r *rig) awaitStage(ctx context.Context, to dualwrite.Stage) error {
	for range 120 {
		st, err := r.admin.Stats(ctx)
		if err == nil && st.Summary.Stage == to.String() {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("the proxy does not run %s", to)
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
	for range 240 {
		st, err := r.admin.Stats(ctx)
		if err != nil {
			return err
		}
		// In complete Workers KV is no longer written, so nothing is
		// verified against it any more.
		s := st.Summary
		if s.Dirty == 0 && (s.Unsettled == 0 || s.Stage == dualwrite.Complete.String()) && st.Total.Queued == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return errors.New("the proxy's keys did not settle within 2 minutes")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// traffic runs a burst of bot updates through the tee and says what the
// proxy counted.
func (r *rig) traffic(ctx context.Context) error {
	began := time.Now()
	r.bot.say("go")
	var done struct {
		Writes      int `json:"writes"`
		Invocations int `json:"invocations"`
	}
	if err := r.bot.next(&done, 5*time.Minute); err != nil {
		return err
	}
	// What an update took, on this machine, four at a time: the binding's
	// latency until handover, the proxy's round trip from then on.
	took := time.Since(began) / time.Duration(max(done.Invocations, 1)) * 4
	st, err := r.admin.Stats(ctx)
	if err != nil {
		return err
	}
	s := st.Summary
	r.say("    bot: %d updates, %d writes, %s an update | proxy: stage=%s ops=%d errors=%d breaker=%s dirty=%d unsettled=%d divergences confirmed=%d suspected=%d late copies=%d",
		done.Invocations, done.Writes, took.Round(time.Millisecond), s.Stage, s.Operations, s.Errors, s.Breaker, s.Dirty, s.Unsettled, s.Divergences.Confirmed, s.Divergences.Suspected, s.LateCopies)
	return nil
}

// verdict settles, then checks the end state: a final parity report, the
// two stores equal key for key, no divergence confirmed.
func (r *rig) verdict(ctx context.Context) error {
	r.say("the end: a full parity report")
	// Rehearsal's own ending: the guide's gate command, now that the bot is
	// on MongoDB.
	if err := r.report(ctx, []string{"--min-parity", "100%", "--out", "final.html"}); err != nil {
		return fmt.Errorf("the final parity report: %w", err)
	}
	st, err := r.admin.Stats(ctx)
	if err != nil {
		return err
	}
	if n := st.Summary.Divergences.Confirmed; n != 0 {
		return fmt.Errorf("%d divergences confirmed, and none was made: the layer reported one of its own making", n)
	}
	fmt.Fprintf(r.out, "\nOK: every stage walked, through the handover to live, back and on to complete; both stores agree on every key and no divergence was confirmed.\n")
	return nil
}

func token() string {
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	return hex.EncodeToString(raw)
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startProxy runs kvshadow-proxy in-process until stop.
func startProxy(ctx context.Context, env map[string]string, args ...string) (adminURL string, stop func(), err error) {
	c, err := service.Parse(args, func(k string) string { return env[k] })
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	out, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := service.Run(ctx, c, w, io.Discard)
		_ = w.Close()
		done <- err
	}()
	stop = func() { cancel(); <-done }
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if _, rest, ok := strings.Cut(lines.Text(), "admin API at "); ok {
			adminURL = strings.TrimSpace(rest)
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if adminURL == "" {
		stop()
		return "", nil, errors.New("kvshadow-proxy did not start")
	}
	return adminURL, stop, nil
}

// botProcess is workers/test/support/run-bot.js: the bot and the bridge in
// miniflare, driven line by line.
type botProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

func startBot(ctx context.Context, workers string, env []string) (*botProcess, error) {
	if _, err := os.Stat(filepath.Join(workers, "node_modules", "miniflare")); err != nil {
		return nil, fmt.Errorf("miniflare is not installed: run `npm ci` in %s (make rehearse does)", workers)
	}
	cmd := exec.CommandContext(ctx, "node", filepath.Join("test", "support", "run-bot.js"))
	cmd.Dir = workers
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b := &botProcess{cmd: cmd, stdin: stdin, lines: make(chan string, 4)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			b.lines <- sc.Text()
		}
		close(b.lines)
	}()
	return b, nil
}

func (b *botProcess) say(line string) { _, _ = io.WriteString(b.stdin, line+"\n") }

func (b *botProcess) next(v any, d time.Duration) error {
	select {
	case l, ok := <-b.lines:
		if !ok {
			return errors.New("the bot's miniflare exited")
		}
		return json.Unmarshal([]byte(l), v)
	case <-time.After(d):
		return fmt.Errorf("the bot said nothing within %s", d)
	}
}

func (b *botProcess) stop() {
	_ = b.stdin.Close()
	done := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-done
	}
}
