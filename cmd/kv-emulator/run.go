package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/internal/kvenv"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
	"github.com/kvshadow/kvshadow/membudget"
)

// EnvToken names the variable the client token is read from.
const EnvToken = "KV_EMULATOR_TOKEN"

// openToken is what the printed environment sets CLOUDFLARE_API_TOKEN to
// when the emulator requires no token: clients insist on one.
const openToken = "no-token-required"

// shutdownGrace is how long in-flight requests get once ctx ends.
const shutdownGrace = 5 * time.Second

// The exit codes, as every command of the project has them.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError is a mistake in the command line: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// exitCode maps run's error to the process exit code.
func exitCode(err error) int {
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		return exitUsage
	}
	return exitError
}

type options struct {
	addr, account, namespaces, tokenFile string
	unauthenticated                      bool
	memoryBudget                         string
	latency, window                      time.Duration
	rateLimit, emptyPages                bool
	failRate                             float64
	failStatus                           int
}

func parse(args []string, stdout io.Writer) (*options, error) {
	fs := flag.NewFlagSet("kv-emulator", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8787", "listen address; loopback only")
	fs.StringVar(&o.account, "account", "", "the only account ID served; empty serves any")
	fs.StringVar(&o.namespaces, "namespace", "kv-emulator", "namespace IDs served from the start, comma-separated")
	fs.StringVar(&o.tokenFile, "token-file", "", "file holding the client token (else $"+EnvToken+")")
	fs.BoolVar(&o.unauthenticated, "unauthenticated", false, "serve without a client token (loopback only)")
	fs.StringVar(&o.memoryBudget, "memory-budget", fmt.Sprintf("%dMiB", membudget.DefaultLimit>>20), "the process's memory budget (requests past it get 503), such as 512MiB")
	fs.DurationVar(&o.latency, "latency", 0, "latency added to every request")
	fs.BoolVar(&o.rateLimit, "write-rate-limit", false, "refuse a second write to a key within a second (429)")
	fs.Float64Var(&o.failRate, "fail-rate", 0, "share of requests answered with -fail-status (0..1)")
	fs.IntVar(&o.failStatus, "fail-status", http.StatusServiceUnavailable, "status of injected failures (500..599)")
	fs.DurationVar(&o.window, "consistency-window", 0, "how long an edge location ("+kvapi.LocationHeader+" header) serves what it cached")
	fs.BoolVar(&o.emptyPages, "empty-pages", false, "answer each list page that is not the last with an empty page first")
	var flagErr bytes.Buffer
	fs.SetOutput(&flagErr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprint(stdout, helpText)
			fs.PrintDefaults()
			return nil, nil
		}
		if strings.HasSuffix(err.Error(), "defined: -token") {
			return nil, usagef("-token: the token is not taken from a flag (a flag shows in ps); set %s or -token-file", EnvToken)
		}
		return nil, usageError{err}
	}
	switch {
	case fs.NArg() > 0:
		return nil, usagef("unexpected arguments %q", fs.Args())
	case o.failRate < 0 || o.failRate > 1:
		return nil, usagef("-fail-rate %v: want 0..1", o.failRate)
	case o.failStatus < 500 || o.failStatus > 599:
		return nil, usagef("-fail-status %d: want a 5xx status (500..599)", o.failStatus)
	}
	if !kvapi.IsLoopback(o.addr) {
		return nil, usagef("-addr %q: the emulator listens on loopback only (127.0.0.1, ::1 or localhost)", o.addr)
	}
	return &o, nil
}

const helpText = `kv-emulator serves the Workers KV REST API on loopback, over in-memory
namespaces, for wrangler, cloudflare-go and any Workers KV REST client.

Usage:
  KV_EMULATOR_TOKEN=dev-token kv-emulator [flags]
  kv-emulator -unauthenticated [flags]

It prints the base URL and the environment that points a client at it
(CLOUDFLARE_API_BASE_URL for wrangler, CLOUDFLARE_BASE_URL and the others for
shadow-report and cfkv); never the token. The client token comes from
$KV_EMULATOR_TOKEN or -token-file, never from a flag (a flag shows in ps);
without one the emulator refuses to start unless told -unauthenticated.

Flags:
`

// token reads the client token from the file or the environment.
func token(o *options, getenv func(string) string) (string, error) {
	tok, err := kvenv.Secret(o.tokenFile, EnvToken, getenv)
	switch {
	case err != nil:
		return "", fmt.Errorf("-token-file: %w", err)
	case tok != "" && o.unauthenticated:
		return "", usagef("-unauthenticated, but a token is set (%s or -token-file): choose one", EnvToken)
	case tok == "" && !o.unauthenticated:
		return "", usagef("no client token: set %s or -token-file, or run -unauthenticated on loopback", EnvToken)
	case tok != "" && kvapi.CheckToken(tok) != nil:
		return "", usagef("the client token holds characters a bearer token cannot carry: use letters, digits and -._~+/ (then = padding)")
	}
	return tok, nil
}

// run serves until ctx ends or the listener fails.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parse(args, stdout)
	if err != nil || o == nil {
		return err
	}
	tok, err := token(o, getenv)
	if err != nil {
		return err
	}
	stores := map[string]kv.Store{}
	var ids []string
	for id := range strings.SplitSeq(o.namespaces, ",") {
		if id = strings.TrimSpace(id); id != "" {
			stores[id] = memory.New(memory.Config{})
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return usagef("-namespace: name at least one namespace")
	}
	limit, err := membudget.ParseSize(o.memoryBudget)
	if err != nil {
		return usagef("-memory-budget: %v", err)
	}
	mem, err := membudget.New(membudget.Config{Limit: limit})
	if err != nil {
		return usagef("-memory-budget: %v", err)
	}
	mem.SetProcessLimit()
	faults := &kvapi.Faults{}
	faults.SetLatency(o.latency)
	faults.SetWriteRateLimit(o.rateLimit)
	faults.SetFailureRate(o.failRate, kvapi.Failure{Status: o.failStatus})
	faults.SetConsistencyWindow(o.window)
	faults.SetEmptyListPages(o.emptyPages)
	api, err := kvapi.New(kvapi.Config{
		Namespaces: stores,
		NewStore:   func() kv.Store { return memory.New(memory.Config{}) },
		AccountID:  o.account,
		Token:      tok,
		Faults:     faults,
		Memory:     mem,
	})
	if err != nil {
		return usageError{err}
	}
	hs, err := kvapi.NewHTTPServer(api, kvapi.ServeConfig{Unauthenticated: o.unauthenticated})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	printEnv(stdout, "http://"+ln.Addr().String()+"/client/v4/", cmp.Or(o.account, kvapi.AnyAccount), ids, tok != "")

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	err = hs.Shutdown(shutdownCtx)
	if serveErr := <-served; !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
		err = serveErr
	}
	return err
}

// printEnv prints where the emulator serves and the environment a client
// needs (see the package doc).
func printEnv(w io.Writer, base, account string, ids []string, withToken bool) {
	auth := "no token required"
	if withToken {
		auth = "token required (from " + EnvToken + " or -token-file; not shown)"
	}
	fmt.Fprintf(w, "kv-emulator: serving the Workers KV API at %s; namespaces %s; %s\n", base, strings.Join(ids, ", "), auth)
	line := "export " + cfkv.ClientEnv(base, account, ids[0])
	if !withToken {
		line += " " + cfkv.EnvAPIToken + "=" + openToken
	}
	fmt.Fprintln(w, line)
	if withToken {
		fmt.Fprintf(w, "# and %s set to the emulator's token\n", cfkv.EnvAPIToken)
	}
}
