package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/service/admin"
	"github.com/kvshadow/kvshadow/tests/command"
	"github.com/kvshadow/kvshadow/tests/mongotest"
	"github.com/kvshadow/kvshadow/tests/proxytest"
)

// ErrConfirmed is the verdict of a check in which the proxy confirmed a
// divergence.
var ErrConfirmed = errors.New("divergences were confirmed")

// ErrAroundTee is the verdict of a check in which a handler of the bot wrote
// its binding around the tee.
var ErrAroundTee = errors.New("the bot wrote its binding around the tee")

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("tee-check", flag.ContinueOnError)
	fs.SetOutput(out)
	bot := fs.String("bot", "", "the bot's Worker project: the folder of its wrangler.toml (required)")
	config := fs.String("config", "wrangler.toml", "the bot's wrangler config, in -bot")
	binding := fs.String("binding", "KV", "the bot's KV binding")
	kvID := fs.String("kv-id", "", "the binding's namespace ID (default: read from the config)")
	workers := fs.String("workers", "", "kvshadow's workers/ folder: the bridge, and the wrangler used when the bot has none (default ../workers from the tests module)")
	port := fs.Int("port", 8787, "the bot's port (0: any free port, which tee-check prints)")
	stage := fs.String("stage", "shadow", "the proxy's stage: dualwrite (copies verified), shadow (reads compared too), handover or live (every call through the proxy; the flip to live waits for the fence, about 65 s)")
	fence := command.Fence(fs)
	var vars []string
	fs.Func("var", "NAME:VALUE, more [vars] for the bot (repeatable)", func(s string) error {
		if !strings.Contains(s, ":") {
			return fmt.Errorf("%q: want NAME:VALUE", s)
		}
		vars = append(vars, s)
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintf(out, "usage: tee-check -bot DIR [flags]\n\nRuns your bot's Worker with the tee against kvshadow-proxy over the same local KV\ndata, as production does; Ctrl-C ends it with a verdict (exit 1 if a divergence\nwas confirmed or a handler wrote its binding around the tee, each named). Your\nWorker's tee reads env.KVSHADOW_URL and env.KVSHADOW_TOKEN, which tee-check sets.\n\n")
		fs.PrintDefaults()
	}
	if done, err := command.Parse(fs, args); done {
		return err
	}
	to, err := dualwrite.ParseStage(*stage)
	if *bot == "" || err != nil || to < dualwrite.DualWrite || to > dualwrite.Live || *fence < 0 {
		fs.Usage()
		return fmt.Errorf("%w: -bot is required, -stage is dualwrite, shadow, handover or live, and -fence not negative", command.ErrUsage)
	}
	if *workers == "" {
		*workers = filepath.Join("..", "workers")
	}
	botMain, id, err := botConfig(filepath.Join(*bot, *config), *binding, *kvID)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kvshadow-tee-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The bot's Worker as it is, each handler's writes to its binding
	// watched (workers/teecheck/entry.js): who wrote around the tee.
	entry := filepath.Join(dir, "entry.js")
	checker, _ := filepath.Abs(filepath.Join(*workers, "teecheck", "entry.js"))
	if err := os.WriteFile(entry, []byte(fmt.Sprintf("import * as bot from %q;\nimport { checked } from %q;\nexport * from %[1]q;\nexport default checked(bot.default);\n", botMain, checker)), 0o600); err != nil {
		return err
	}

	mongo, err := mongotest.Start(ctx, mongotest.Config{IgnoreEnv: true})
	if err != nil {
		return err
	}
	defer mongo.Close()
	clientToken, adminToken, bridgeToken := proxytest.Token(), proxytest.Token(), proxytest.Token()
	persist := filepath.Join(dir, "kv")

	// The bridge, over the bot's namespace ID, in the same persisted data.
	bridgeCfg := filepath.Join(dir, "bridge.toml")
	bridgeMain, _ := filepath.Abs(filepath.Join(*workers, "bridge", "worker.js"))
	if err := os.WriteFile(bridgeCfg, []byte(fmt.Sprintf("name = \"kvshadow-bridge\"\nmain = %q\ncompatibility_date = \"2025-01-01\"\nkv_namespaces = [{ binding = \"KV\", id = %q }]\n", bridgeMain, id)), 0o600); err != nil {
		return err
	}
	wrangler := wranglerFor(*bot, *workers)
	bridge, err := startDev(ctx, wrangler, dir, []string{"dev", "-c", bridgeCfg, "--persist-to", persist, "--ip", "127.0.0.1", "--port", "0", "--var", "BRIDGE_TOKEN:" + bridgeToken})
	if err != nil {
		return fmt.Errorf("the bridge's wrangler dev: %w", err)
	}
	defer bridge.stop()
	bridgeURL := bridge.url + "client/v4/"

	env := map[string]string{
		"CLOUDFLARE_ACCOUNT_ID": "local", "CLOUDFLARE_KV_NAMESPACE_ID": id, "CLOUDFLARE_API_TOKEN": bridgeToken,
		"MONGODB_URI": mongo.URI(), "KVSHADOW_TOKEN": clientToken, "KVSHADOW_ADMIN_TOKEN": adminToken, "KVSHADOW_KEY_SECRET": proxytest.Token(),
	}
	// The proxy outlives Ctrl-C long enough to verify the last copies.
	proxyFlags, _ := command.ProxyFlags(*fence)
	at, stopProxy, err := proxytest.Run(context.WithoutCancel(ctx), env, os.Stderr, append(proxyFlags, "--primary-url", bridgeURL))
	if err != nil {
		return err
	}
	defer stopProxy()
	adm := &admin.Client{URL: at.Admin, Token: adminToken}
	fmt.Fprintf(out, "tee-check: kvshadow-proxy's admin API: export ADMIN=%s KVSHADOW_ADMIN_TOKEN=%s (docs/admin-api.md; PUT $ADMIN/stage moves the stage)\n", at.Admin, adminToken)
	for st := dualwrite.Shadow; st <= to; st++ {
		if _, err := command.SetStage(ctx, adm, st, false, func(why string) { fmt.Fprintf(out, "tee-check: moving to %s waits: %s\n", st, why) }); err != nil {
			return err
		}
	}

	// The user's Worker, its tee pointed at the proxy, in the same data.
	devArgs := []string{"dev", entry, "-c", *config, "--var", "KVSHADOW_TEE_CHECK_BINDING:" + *binding, "--persist-to", persist, "--ip", "127.0.0.1", "--port", fmt.Sprint(*port),
		"--var", "KVSHADOW_URL:" + at.Origin, "--var", "KVSHADOW_TOKEN:" + clientToken}
	for _, v := range vars {
		devArgs = append(devArgs, "--var", v)
	}
	worker, err := startDev(ctx, wrangler, *bot, devArgs)
	if err != nil {
		return fmt.Errorf("the bot's wrangler dev: %w", err)
	}
	defer worker.stop()
	fmt.Fprintf(out, "tee-check: the bot at %s (wrangler dev, its tee at kvshadow-proxy %s, stage %s; the bridge at %s over the same local KV data, namespace %s; MongoDB embedded). Use the bot; Ctrl-C ends the check.\n", worker.url, at.Origin, to, bridgeURL, id)
	primary, err := cfkv.New(cfkv.Config{AccountID: "local", NamespaceID: id, APIToken: bridgeToken, BaseURL: bridgeURL, MaxRetries: -1})
	if err != nil {
		return err
	}
	return watch(ctx, adm, out, primary, mongo.URI(), &admin.Client{URL: worker.url})
}

// watch prints the proxy's counts as they change until ctx ends, then
// lets the last copies settle and gives the verdict, naming each key that
// differs in plain (it is the user's own machine) and each handler that
// wrote around the tee.
func watch(ctx context.Context, adm *admin.Client, out io.Writer, primary kv.Store, mongoURI string, bot *admin.Client) error {
	said := ""
	for ctx.Err() == nil {
		if st, err := adm.Stats(context.Background()); err == nil && command.Counts(st) != said {
			said = command.Counts(st)
			fmt.Fprintf(out, "tee-check: %s\n", said)
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	// The last copies: sent after the invocations that wrote them are
	// over, then verified; at most 20 s.
	// The Worker says (workers/teecheck/entry.js) how many of its
	// invocations are not over (their copies may be unsent), and the writes
	// to its binding of which the tee sent no copy, by invocation.
	var seen struct {
		Running int
		Binding string
		Around  []struct{ By, Key string }
	}
	var werr error
	st, _ := command.Settled(context.Background(), adm, 20*time.Second, func(ctx context.Context) bool {
		_, werr = bot.Do(ctx, http.MethodGet, "__kvshadow/tee-check", "", &seen)
		return werr != nil || seen.Running == 0
	})
	fmt.Fprintf(out, "tee-check: at the end: %s\n", command.Counts(st))
	cause := fmt.Sprintf("no handler wrote env.%s around the tee, so the tee, the bridge or the proxy got a write wrong", seen.Binding)
	if werr != nil {
		fmt.Fprintf(out, "tee-check: the Worker's handlers were not watched (its default export is no object of handlers: a WorkerEntrypoint class?): %v\n", werr)
		cause = "a handler wrote the binding around the tee, or the tee, the bridge or the proxy got a write wrong"
	}
	handlers, keyBy := map[string][]string{}, map[string][]string{}
	for _, a := range seen.Around {
		if !strings.HasPrefix(a.Key, command.Excluded) {
			handlers[a.By] = append(handlers[a.By], a.Key)
			keyBy[a.Key] = append(keyBy[a.Key], a.By)
		}
	}
	n, err := differ(out, primary, mongoURI, keyBy)
	if err != nil {
		return fmt.Errorf("comparing the stores at the end: %w", err)
	}
	var who []string
	for _, by := range slices.Sorted(maps.Keys(handlers)) {
		fmt.Fprintf(out, "tee-check: %s writes env.%s directly, around the tee (no copy of its writes reached kvshadow-proxy): %s; wrap env.%[2]s with the tee in this handler as workers/README.md shows (The one line the bot changes)\n",
			by, seen.Binding, strings.Join(handlers[by], ", "))
		who = append(who, fmt.Sprintf("%s (%s)", by, strings.Join(handlers[by], ", ")))
	}
	if len(who) > 0 {
		return fmt.Errorf("%w: %s; %d divergences confirmed by the proxy, %d keys differ at the end", ErrAroundTee, strings.Join(who, "; "), st.Summary.Divergences.Confirmed, n)
	}
	if n > 0 || st.Summary.Divergences.Confirmed > 0 {
		return fmt.Errorf("%w: %d by the proxy, and %d keys differ at the end (each named above); %s", ErrConfirmed, st.Summary.Divergences.Confirmed, n, cause)
	}
	fmt.Fprintf(out, "tee-check: OK: no divergence confirmed, no write around the tee\n")
	return nil
}

// differ compares the Worker's local KV data with MongoDB key by key, as
// shadow-report does, and names each key that differs, in plain (it is
// the user's own machine), with what it means and the handlers that wrote
// it around the tee (keyBy); it returns how many. A write around the tee
// that nothing read is found so too.
func differ(out io.Writer, primary kv.Store, mongoURI string, keyBy map[string][]string) (int, error) {
	client, err := mongokv.NewClient(mongokv.ClientConfig{URI: mongoURI})
	if err != nil {
		return 0, err
	}
	defer client.Close(context.Background())
	shadow, err := client.Store(mongokv.Config{})
	if err != nil {
		return 0, err
	}
	r, err := report.Run(context.Background(), report.Config{Primary: report.Side{Store: primary, Name: "Workers KV"}, Shadow: report.Side{Store: shadow, Name: "MongoDB"},
		KeyPolicy: compare.KeyPlain, Scope: report.Scope{ExcludePrefixes: []string{command.Excluded}}})
	if err != nil {
		return 0, err
	}
	for _, d := range r.Divergences {
		who := ""
		if by := keyBy[d.Key]; len(by) > 0 {
			who = "; written around the tee by " + strings.Join(by, ", ")
		}
		fmt.Fprintf(out, "tee-check: %s: %s: %s%s\n", d.Key, d.Kind, compare.Explain(d.Kind, compare.PrimaryAuthority).Meaning, who)
	}
	return len(r.Divergences), nil
}

// botConfig reads the bot's wrangler.toml: the absolute path of its main
// module, and the namespace ID of its KV binding (either form:
// kv_namespaces = [{...}] or [[kv_namespaces]]) unless id is given.
func botConfig(path, binding, id string) (main, _ string, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("the bot's config: %w", err)
	}
	m := regexp.MustCompile(`(?m)^main\s*=\s*"([^"]+)"`).FindSubmatch(raw)
	if m == nil {
		return "", "", fmt.Errorf("%s names no main module", path)
	}
	if main, _ = filepath.Abs(filepath.Join(filepath.Dir(path), string(m[1]))); id != "" {
		return main, id, nil
	}
	entry := regexp.MustCompile(`(?s)\{[^}]*\}|\[\[kv_namespaces\]\][^\[]*`)
	bind := regexp.MustCompile(`binding\s*=\s*"` + regexp.QuoteMeta(binding) + `"`)
	idRE := regexp.MustCompile(`(?m)(?:^|[\s,{])id\s*=\s*"([^"]+)"`)
	for _, e := range entry.FindAllString(string(raw), -1) {
		if bind.MatchString(e) {
			if m := idRE.FindStringSubmatch(e); m != nil {
				return main, m[1], nil
			}
		}
	}
	return "", "", fmt.Errorf("%s binds no KV namespace as %q (give -binding or -kv-id)", path, binding)
}

// wranglerFor is the bot's own wrangler when it has one, else kvshadow's.
func wranglerFor(bot, workers string) string {
	for _, dir := range []string{bot, workers} {
		p, _ := filepath.Abs(filepath.Join(dir, "node_modules", ".bin", "wrangler"))
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "wrangler"
}

// dev is one `wrangler dev`, serving at url.
type dev struct {
	cmd  *exec.Cmd
	done chan struct{}
	url  string
}

// readyOn is wrangler's line once the Worker serves (miniflare's logReady,
// at WRANGLER_LOG=info), with the port it bound: a port given as 0 is
// bound by wrangler itself, so no other process can take it between a
// choice and a bind, and the URL read here is that wrangler's, not that of
// whatever else answers on a port.
var readyOn = regexp.MustCompile(`Ready on (?:\x1b\[[0-9;]*m)*(http://[0-9.]+:[0-9]+)`)

// startDev runs wrangler with args (its --inspector-port any free one) and
// waits until it says where the Worker serves.
func startDev(ctx context.Context, wrangler, dir string, args []string) (*dev, error) {
	cmd := exec.Command(wrangler, append(args, "--inspector-port", "0")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WRANGLER_SEND_METRICS=false", "CI=1", "NO_UPDATE_NOTIFIER=1", "WRANGLER_LOG=info")
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr                                // its errors
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // wrangler dev starts workerd: stop the group, and nothing else
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("wrangler: %w (make workers-deps installs it)", err)
	}
	d := &dev{cmd: cmd, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		for lines, said := bufio.NewScanner(stdout), false; lines.Scan(); {
			if m := readyOn.FindStringSubmatch(lines.Text()); m != nil && !said {
				said = true
				ready <- m[1] + "/"
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(d.done)
	}()
	var err error
	select {
	case d.url = <-ready:
		return d, nil
	case <-d.done:
		err = fmt.Errorf("wrangler ended (%v) before it was ready (its error above)", cmd.ProcessState)
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(2 * time.Minute):
		err = errors.New("wrangler was not ready within 2m")
	}
	d.stop()
	return nil, err
}

func (d *dev) stop() {
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.done
	}
}
