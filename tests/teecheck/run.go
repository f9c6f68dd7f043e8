package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/service/admin"
	"github.com/kvshadow/kvshadow/tests/mongotest"
	"github.com/kvshadow/kvshadow/tests/proxytest"
)

// ErrConfirmed is the verdict of a check in which the proxy confirmed a
// divergence.
var ErrConfirmed = errors.New("divergences were confirmed")

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("tee-check", flag.ContinueOnError)
	fs.SetOutput(out)
	bot := fs.String("bot", "", "the bot's Worker project: the folder of its wrangler.toml (required)")
	config := fs.String("config", "wrangler.toml", "the bot's wrangler config, in -bot")
	binding := fs.String("binding", "KV", "the bot's KV binding")
	kvID := fs.String("kv-id", "", "the binding's namespace ID (default: read from the config)")
	workers := fs.String("workers", "", "kvshadow's workers/ folder: the bridge, and the wrangler used when the bot has none (default ../workers from the tests module)")
	port := fs.Int("port", 8787, "the bot's port")
	stage := fs.String("stage", "shadow", "the proxy's stage: dualwrite (copies verified), shadow (reads compared too), handover or live (every call through the proxy; the flip to live waits for the fence, about 65 s)")
	var vars []string
	fs.Func("var", "NAME:VALUE, more [vars] for the bot (repeatable)", func(s string) error {
		if !strings.Contains(s, ":") {
			return fmt.Errorf("%q: want NAME:VALUE", s)
		}
		vars = append(vars, s)
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintf(out, "usage: tee-check -bot DIR [flags]\n\nRuns your bot's Worker with the tee against kvshadow-proxy over the same local KV\ndata, as production does; Ctrl-C ends it with a verdict (exit 1 if a divergence\nwas confirmed). Your Worker's tee reads env.KVSHADOW_URL and env.KVSHADOW_TOKEN,\nwhich tee-check sets.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	to, err := dualwrite.ParseStage(*stage)
	if *bot == "" || err != nil || to < dualwrite.DualWrite || to > dualwrite.Live {
		fs.Usage()
		return fmt.Errorf("%w: -bot is required, and -stage is dualwrite, shadow, handover or live", errUsage)
	}
	if *workers == "" {
		*workers = filepath.Join("..", "workers")
	}
	if *kvID == "" {
		if *kvID, err = bindingID(filepath.Join(*bot, *config), *binding); err != nil {
			return err
		}
	}
	dir, err := os.MkdirTemp("", "kvshadow-tee-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	mongo, err := mongotest.Start(ctx, mongotest.Config{IgnoreEnv: true})
	if err != nil {
		return err
	}
	defer mongo.Close()
	clientToken, adminToken, bridgeToken := proxytest.Token(), proxytest.Token(), proxytest.Token()
	bridgePort := freePort()
	proxyAddr, err := proxytest.FreeAddr()
	if err != nil {
		return err
	}
	persist := filepath.Join(dir, "kv")

	// The bridge, over the bot's namespace ID, in the same persisted data.
	bridgeCfg := filepath.Join(dir, "bridge.toml")
	bridgeMain, _ := filepath.Abs(filepath.Join(*workers, "bridge", "worker.js"))
	if err := os.WriteFile(bridgeCfg, []byte(fmt.Sprintf("name = \"kvshadow-bridge\"\nmain = %q\ncompatibility_date = \"2025-01-01\"\nkv_namespaces = [{ binding = \"KV\", id = %q }]\n", bridgeMain, *kvID)), 0o600); err != nil {
		return err
	}
	wrangler := wranglerFor(*bot, *workers)
	bridge, err := startDev(ctx, wrangler, dir, []string{"dev", "-c", bridgeCfg, "--persist-to", persist, "--ip", "127.0.0.1", "--port", fmt.Sprint(bridgePort), "--inspector-port", fmt.Sprint(freePort()), "--var", "BRIDGE_TOKEN:" + bridgeToken})
	if err != nil {
		return err
	}
	defer bridge.stop()
	bridgeURL := fmt.Sprintf("http://127.0.0.1:%d/client/v4/", bridgePort)

	env := map[string]string{
		"CLOUDFLARE_ACCOUNT_ID": "local", "CLOUDFLARE_KV_NAMESPACE_ID": *kvID, "CLOUDFLARE_API_TOKEN": bridgeToken,
		"MONGODB_URI": mongo.URI(), "KVSHADOW_TOKEN": clientToken, "KVSHADOW_ADMIN_TOKEN": adminToken, "KVSHADOW_KEY_SECRET": proxytest.Token(),
	}
	if err := waitHTTP(ctx, bridgeURL, 2*time.Minute); err != nil {
		return fmt.Errorf("the bridge's wrangler dev: %w", err)
	}
	// The proxy outlives Ctrl-C long enough to verify the last copies.
	at, stopProxy, err := proxytest.Run(context.WithoutCancel(ctx), env, os.Stderr, []string{"--listen", proxyAddr, "--admin-listen", "127.0.0.1:0", "--primary-url", bridgeURL,
		"--stage", "dualwrite", "--consistency-window", "0", "--repair-interval", "5s", "--poll-interval", "500ms", "--exclude-prefix", "__retry:"})
	if err != nil {
		return err
	}
	defer stopProxy()
	adm := &admin.Client{URL: at.Admin, Token: adminToken}
	fmt.Fprintf(out, "tee-check: kvshadow-proxy's admin API: export ADMIN=%s KVSHADOW_ADMIN_TOKEN=%s (docs/admin-api.md; PUT $ADMIN/stage moves the stage)\n", at.Admin, adminToken)
	for st := dualwrite.Shadow; st <= to; st++ {
		if err := flip(ctx, adm, st, out); err != nil {
			return err
		}
	}

	// The user's Worker, its tee pointed at the proxy, in the same data.
	devArgs := []string{"dev", "-c", *config, "--persist-to", persist, "--ip", "127.0.0.1", "--port", fmt.Sprint(*port), "--inspector-port", fmt.Sprint(freePort()),
		"--var", "KVSHADOW_URL:http://" + proxyAddr, "--var", "KVSHADOW_TOKEN:" + clientToken}
	for _, v := range vars {
		devArgs = append(devArgs, "--var", v)
	}
	worker, err := startDev(ctx, wrangler, *bot, devArgs)
	if err != nil {
		return err
	}
	defer worker.stop()
	botURL := fmt.Sprintf("http://127.0.0.1:%d/", *port)
	if err := waitHTTP(ctx, botURL, 2*time.Minute); err != nil {
		return fmt.Errorf("the bot's wrangler dev: %w", err)
	}
	fmt.Fprintf(out, "tee-check: the bot at %s (wrangler dev, its tee at kvshadow-proxy %s, stage %s; the bridge at %s over the same local KV data, namespace %s; MongoDB embedded). Use the bot; Ctrl-C ends the check.\n", botURL, proxyAddr, to, bridgeURL, *kvID)
	primary, err := cfkv.New(cfkv.Config{AccountID: "local", NamespaceID: *kvID, APIToken: bridgeToken, BaseURL: bridgeURL, MaxRetries: -1})
	if err != nil {
		return err
	}
	return watch(ctx, adm, out, primary, mongo.URI())
}

// errUsage marks a command line mistake: exit 2, as for every command.
var errUsage = errors.New("usage")

// flip moves the proxy to stage to, asking again while the fence holds it
// (the way into live waits for its interval and the full comparison).
func flip(ctx context.Context, adm *admin.Client, to dualwrite.Stage, out io.Writer) error {
	for said := false; ; said = true {
		_, err := adm.SetStage(ctx, to)
		if e := (*admin.Error)(nil); !errors.As(err, &e) || e.Status != http.StatusConflict {
			return err
		}
		if !said {
			fmt.Fprintf(out, "tee-check: moving to %s waits for the fence: %v\n", to, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// watch prints the proxy's counts as they change until ctx ends, then
// lets the last copies settle and gives the verdict, naming each key that
// differs in plain (it is the user's own machine).
func watch(ctx context.Context, adm *admin.Client, out io.Writer, primary kv.Store, mongoURI string) error {
	said := ""
	for ctx.Err() == nil {
		if line, err := counts(context.Background(), adm); err == nil && line != said {
			fmt.Fprintf(out, "tee-check: %s\n", line)
			said = line
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	// The last copies: sent 250 ms after an invocation's last write, then
	// verified; at most 20 s.
	settle, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var st admin.StatsView
	for settle.Err() == nil {
		var err error
		if st, err = adm.Stats(settle); err == nil && st.Summary.Dirty == 0 && st.Summary.Unsettled == 0 && st.Total.Queued == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	line, err := counts(context.Background(), adm)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "tee-check: at the end: %s\n", line)
	n, err := differ(out, primary, mongoURI)
	if err != nil {
		return fmt.Errorf("comparing the stores at the end: %w", err)
	}
	if n > 0 || st.Summary.Divergences.Confirmed > 0 {
		return fmt.Errorf("%w: %d by the proxy, and %d keys differ at the end (each named above; nothing was injected, so a handler wrote the binding around the tee, or the tee, the bridge or the proxy got a write wrong)",
			ErrConfirmed, st.Summary.Divergences.Confirmed, n)
	}
	fmt.Fprintf(out, "tee-check: OK: no divergence confirmed\n")
	return nil
}

// differ compares the Worker's local KV data with MongoDB key by key, as
// shadow-report does, and names each key that differs, in plain (it is
// the user's own machine), with what it means; it returns how many. A write
// around the tee that nothing read is found so too.
func differ(out io.Writer, primary kv.Store, mongoURI string) (int, error) {
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
		KeyPolicy: compare.KeyPlain, Scope: report.Scope{ExcludePrefixes: []string{"__retry:"}}})
	if err != nil {
		return 0, err
	}
	for _, d := range r.Divergences {
		fmt.Fprintf(out, "tee-check: %s: %s: %s%s\n", d.Key, d.Kind, compare.Explain(d.Kind, compare.PrimaryAuthority).Meaning, around(d.Kind))
	}
	return len(r.Divergences), nil
}

// around says who wrote a key that Workers KV holds newer than MongoDB.
func around(k compare.Kind) string {
	if k == compare.MissingInShadow || k == compare.ValueMismatch {
		return "; no copy of its last write reached the proxy: the handler that wrote it wrote around the tee (env.KV itself, not the kvshadowTee that wraps it)"
	}
	return ""
}

func counts(ctx context.Context, adm *admin.Client) (string, error) {
	st, err := adm.Stats(ctx)
	if err != nil {
		return "", err
	}
	var verified uint64
	for _, n := range st.Total.Verifications {
		verified += n
	}
	s := st.Summary
	return fmt.Sprintf("stage=%s copies verified=%d tee reads=%d unsettled=%d dirty=%d divergences confirmed=%d suspected=%d",
		s.Stage, verified, st.Total.TeeReads, s.Unsettled, s.Dirty, s.Divergences.Confirmed, s.Divergences.Suspected), nil
}

// bindingID reads the namespace ID of the bot's KV binding from its
// wrangler.toml (either form: kv_namespaces = [{...}] or [[kv_namespaces]]).
func bindingID(path, binding string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("the bot's config: %w (or give -kv-id)", err)
	}
	entry := regexp.MustCompile(`(?s)\{[^}]*\}|\[\[kv_namespaces\]\][^\[]*`)
	bind := regexp.MustCompile(`binding\s*=\s*"` + regexp.QuoteMeta(binding) + `"`)
	id := regexp.MustCompile(`(?m)(?:^|[\s,{])id\s*=\s*"([^"]+)"`)
	for _, e := range entry.FindAllString(string(raw), -1) {
		if bind.MatchString(e) {
			if m := id.FindStringSubmatch(e); m != nil {
				return m[1], nil
			}
		}
	}
	return "", fmt.Errorf("%s binds no KV namespace as %q (give -binding or -kv-id)", path, binding)
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

// dev is one `wrangler dev`, its output kept for when it fails.
type dev struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startDev(ctx context.Context, wrangler, dir string, args []string) (*dev, error) {
	cmd := exec.Command(wrangler, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WRANGLER_SEND_METRICS=false", "CI=1", "NO_UPDATE_NOTIFIER=1", "WRANGLER_LOG=warn")
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	cmd.SysProcAttr = procGroup()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("wrangler: %w (make workers-deps installs it)", err)
	}
	d := &dev{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(d.done) }()
	return d, nil
}

func (d *dev) stop() {
	stopGroup(d.cmd)
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		killGroup(d.cmd)
		<-d.done
	}
}

func waitHTTP(ctx context.Context, url string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("no answer at %s within %s", url, d)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func freePort() int {
	a, err := proxytest.FreeAddr()
	if err != nil {
		return 0
	}
	_, p, _ := net.SplitHostPort(a)
	var n int
	fmt.Sscan(p, &n)
	return n
}
