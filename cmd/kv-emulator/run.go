package main

import (
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
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// shutdownGrace is how long in-flight requests get once ctx ends.
const shutdownGrace = 5 * time.Second

// run serves until ctx ends or the listener fails.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kv-emulator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		addr       = fs.String("addr", "127.0.0.1:8787", "listen address; loopback only")
		account    = fs.String("account", "", "the only account ID served; empty serves any")
		namespaces = fs.String("namespace", "kv-emulator", "namespace IDs served, comma-separated")
		token      = fs.String("token", "", `API token required as "Authorization: Bearer <token>"; empty requires none`)
		latency    = fs.Duration("latency", 0, "latency added to every request")
		rateLimit  = fs.Bool("write-rate-limit", false, "refuse a second write to a key within a second (429)")
		failRate   = fs.Float64("fail-rate", 0, "share of requests answered with -fail-status (0..1)")
		failStatus = fs.Int("fail-status", http.StatusServiceUnavailable, "status of injected failures (5xx)")
		window     = fs.Duration("consistency-window", 0, "how long an edge location ("+kvapi.LocationHeader+" header) serves what it cached")
		emptyPages = fs.Bool("empty-pages", false, "answer each list page that is not the last with an empty page first")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := loopbackOnly(*addr); err != nil {
		return err
	}
	if *failRate < 0 || *failRate > 1 {
		return fmt.Errorf("-fail-rate %v: want 0..1", *failRate)
	}
	stores := map[string]kv.Store{}
	var ids []string
	for id := range strings.SplitSeq(*namespaces, ",") {
		if id = strings.TrimSpace(id); id != "" {
			stores[id] = memory.New(memory.Config{})
			ids = append(ids, id)
		}
	}
	faults := &kvapi.Faults{}
	faults.SetLatency(*latency)
	faults.SetWriteRateLimit(*rateLimit)
	faults.SetFailureRate(*failRate, kvapi.Failure{Status: *failStatus})
	faults.SetConsistencyWindow(*window)
	faults.SetEmptyListPages(*emptyPages)
	api, err := kvapi.New(kvapi.Config{Namespaces: stores, AccountID: *account, Token: *token, Faults: faults})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	base := "http://" + ln.Addr().String() + "/client/v4/"
	acc := *account
	if acc == "" {
		acc = "any-account"
	}
	auth := "no token required"
	if *token != "" {
		auth = "token required (given with -token; not shown)"
	}
	fmt.Fprintf(stdout, "kv-emulator: serving the Workers KV API at %s; namespaces %s; %s\n", base, strings.Join(ids, ", "), auth)
	fmt.Fprintf(stdout, "export %s=%s %s=%s %s=%s\n", cfkv.EnvBaseURL, base, cfkv.EnvAccountID, acc, cfkv.EnvNamespaceID, ids[0])

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	if serveErr := <-served; !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
		err = serveErr
	}
	return err
}

// loopbackOnly refuses an address that would be reachable from elsewhere.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-addr %q: the emulator listens on loopback only (127.0.0.1, ::1 or localhost)", addr)
	}
	return nil
}
