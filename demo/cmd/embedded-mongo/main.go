// Command embedded-mongo starts the embedded MongoDB-compatible server that
// the demo and the integration tests use (FerretDB over SQLite, on a
// loopback port), prints its URI, and serves until interrupted: a MongoDB
// for experiments with shadow-report, the kv-emulator or mongosh, with
// nothing to install.
//
//	make mongo                      # or, in demo/: go run ./cmd/embedded-mongo
//	MONGODB_URI=mongodb://127.0.0.1:PORT/ shadow-report ...
//
// It lives in the demo module, which already embeds FerretDB; no library
// user compiles it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/kvshadow/kvshadow/tests/mongotest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "embedded-mongo:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

// run starts the server, prints its URI, calls ready (for tests) and serves
// until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready func(uri string)) error {
	fs := flag.NewFlagSet("embedded-mongo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("dir", ".demo/embedded-mongo", "directory of the server's data (kept between runs)")
	listen := fs.String("listen", "", "address to listen on, such as 127.0.0.1:27018 (default: a random loopback port)")
	fs.Usage = func() {
		fmt.Fprint(stdout, `embedded-mongo: the embedded MongoDB-compatible server (FerretDB over SQLite) on a
loopback port, for experiments; it prints the URI and serves until Ctrl-C.

Usage, from the repository:   make mongo
       or, in demo/:          go run ./cmd/embedded-mongo [-dir DIR] [-listen ADDR]

To restart it under the same MONGODB_URI (a client that must reconnect, an
outage rehearsed), stop it and start it again with the same -dir and a fixed
-listen, such as -listen 127.0.0.1:27018: the data and the URI are kept.

FerretDB's limits: no TTL index (expired keys are hidden at read time), every
query scans its collection (keep to thousands of documents), no transactions.

Flags:
`)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v (run with -help for the flags)", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q (run with -help for the flags)", errUsage, fs.Args())
	}
	srv, err := mongotest.Start(ctx, mongotest.Config{Dir: *dir, IgnoreEnv: true, Listen: *listen})
	if err != nil {
		return err
	}
	defer srv.Close()
	uri := srv.URI() // FerretDB's own: loopback, no credentials
	fmt.Fprintf(stdout, "embedded MongoDB-compatible server (FerretDB), data in %s\n", srv.Dir())
	fmt.Fprintf(stdout, "export MONGODB_URI=%s\n", uri)
	fmt.Fprintln(stdout, "serving until Ctrl-C")
	if ready != nil {
		ready(uri)
	}
	<-ctx.Done()
	fmt.Fprintln(stderr, "embedded-mongo: stopped")
	return nil
}
