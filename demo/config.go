package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"
)

// config is what the flags set.
type config struct {
	duration time.Duration // of the workload
	dir      string        // FerretDB's data and the reports
	workers  int
	rate     float64       // operations per second, all workers together
	latency  time.Duration // Workers KV emulator latency
	window   time.Duration // Workers KV consistency window
	seed     uint64
}

// errUsage marks a command line the demo cannot run; main exits 2 on it,
// as every command of the project does.
var errUsage = errors.New("usage")

type usageError struct{ msg string }

func (e *usageError) Error() string   { return e.msg }
func (e *usageError) Is(t error) bool { return t == errUsage }

func usage(msg string) error { return &usageError{msg: msg + " (run with -help for the flags)"} }

// parseFlags reads the flags. -help prints the usage on stdout and returns
// flag.ErrHelp; a mistake returns an error matching errUsage.
func parseFlags(args []string, stdout io.Writer) (config, error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by main
	fs.Usage = func() {
		fs.SetOutput(stdout)
		fmt.Fprint(stdout, `demo: the whole Workers KV -> MongoDB migration on one machine.

Usage, from the repository:   make demo DEMO_FLAGS='-duration 30s'
       or, in demo/:          go run . [flags]

Starts a Workers KV emulator, an embedded MongoDB-compatible server and
kvshadow-proxy over both, runs a bot-like workload through the proxy (over HTTP,
with cloudflare-go), takes the shadow down half way,
injects a few divergences and ends with shadow-report. Exits 0 only when every
guarantee held. Telemetry goes to OTEL_EXPORTER_OTLP_ENDPOINT when it is set.

Flags:
`)
		fs.PrintDefaults()
	}
	c := config{}
	fs.DurationVar(&c.duration, "duration", 60*time.Second, "how long the workload runs")
	fs.StringVar(&c.dir, "dir", ".demo", "directory for the MongoDB server's data and the reports (wiped at start)")
	fs.IntVar(&c.workers, "workers", 4, "concurrent bot workers")
	fs.Float64Var(&c.rate, "rate", 150, "operations per second, all workers together")
	fs.DurationVar(&c.latency, "latency", 3*time.Millisecond, "latency of the Workers KV emulator")
	fs.DurationVar(&c.window, "consistency-window", 2*time.Second, "how long the Workers KV emulator serves cached reads")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the workload")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, usage(err.Error())
	}
	switch {
	case fs.NArg() > 0:
		return c, usage(fmt.Sprintf("unexpected arguments %q", fs.Args()))
	case c.duration < 10*time.Second:
		return c, usage("-duration must be at least 10s: the stages need time to show")
	case c.workers < 1 || c.rate <= 0:
		return c, usage("-workers and -rate must be positive")
	case c.dir == "":
		return c, usage("-dir is required")
	case c.latency < 0 || c.window < 0:
		return c, usage("-latency and -consistency-window cannot be negative")
	}
	return c, nil
}
