package service

import (
	"log/slog"
	"net"

	"github.com/kvshadow/kvshadow/clock"
)

// Option sets a piece of Run's plumbing.
type Option func(*runOptions)

type runOptions struct {
	open      Opener
	clock     clock.Clock
	logger    *slog.Logger
	listening func(Listening)
	front     net.Listener
	// processLimit makes the memory budget the Go runtime's memory limit:
	// the command's choice (Main), not that of a program embedding Run.
	processLimit bool
}

// Listening is where a started service serves.
type Listening struct {
	// API is the Workers KV API root (".../client/v4/"), Admin the admin
	// API's root (".../"), Origin the front's scheme and host, under which
	// TeePath is served.
	API, Admin, Origin string
}

// WithListening calls fn once the listeners are up and the service is in
// the stage document's stage, before it serves: what a program embedding
// the service needs instead of reading the banner.
func WithListening(fn func(Listening)) Option { return func(o *runOptions) { o.listening = fn } }

// WithListener serves the front on ln, which the caller bound, instead of
// binding --listen: a caller that hands the address out before the service
// starts (a test's Workers learn the tee's origin first) holds it meanwhile,
// so that no other process can take it. Run closes ln.
func WithListener(ln net.Listener) Option { return func(o *runOptions) { o.front = ln } }

// WithBackends replaces OpenBackends: tests run the service over stores of
// their own making.
func WithBackends(open Opener) Option { return func(o *runOptions) { o.open = open } }

// WithClock sets the clock of the data path (the front, the dual-write
// stores, the Opener's stores); the control board's polls and the probes
// keep the system clock.
func WithClock(c clock.Clock) Option { return func(o *runOptions) { o.clock = c } }

// WithLogger sets the logger of the service and its stores; the default
// writes text to Run's stderr.
func WithLogger(l *slog.Logger) Option { return func(o *runOptions) { o.logger = l } }

func resolve(opts []Option) runOptions {
	var o runOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.open == nil {
		o.open = OpenBackends
	}
	o.clock = clock.OrReal(o.clock)
	return o
}
