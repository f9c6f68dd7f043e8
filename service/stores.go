package service

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/kvshadow/kvshadow/assembly"
	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/kv/otelkv"
	"github.com/kvshadow/kvshadow/kvapi"
	"github.com/kvshadow/kvshadow/membudget"
)

// Sides are one namespace's two stores; Backends what the service runs
// over (package assembly's).
type (
	Sides    = assembly.Sides
	Backends = assembly.Backends
)

// Plumbing is what an Opener gives the stores it opens.
type Plumbing struct {
	Clock  clock.Clock
	Logger *slog.Logger
	// Memory is the process's memory budget, which the answers of a store
	// reached over HTTP are charged to as they are read (primaryClient).
	Memory *membudget.Budget
}

// primaryAnswerFactor is what a primary's answer costs for each byte read:
// the JSON as read, the envelope's result and each value's raw JSON cut
// from it, the values decoded (cfkv's bulk get).
const primaryAnswerFactor = 3

// primaryClient is the HTTP client of the primary's cfkv stores: cfkv's
// transport (net/http's, with idle connections for concurrent callers and
// no compression), its answers charged to the memory budget. A bulk get of values
// that are not UTF-8 answers six times their size, which nothing else would
// count.
func primaryClient(mem *membudget.Budget) *http.Client {
	return &http.Client{Transport: mem.Transport(cfkv.NewTransport(), primaryAnswerFactor)}
}

// Opener opens the Backends for a Config; see WithBackends.
type Opener func(ctx context.Context, c *Config, p Plumbing) (*Backends, error)

// OpenBackends is the default Opener: Workers KV (or the API at
// PrimaryURL) through cfkv and MongoDB through mongokv, with the control
// board in MongoDB; or, for --demo, OpenDemo.
func OpenBackends(ctx context.Context, c *Config, p Plumbing) (*Backends, error) {
	if c.Demo {
		return OpenDemo(ctx, c, p)
	}
	return assembly.OpenBackends(assembly.Settings{Account: c.Account, Namespaces: c.Namespaces, CFToken: c.secrets.cfToken, PrimaryURL: c.PrimaryURL,
		HTTPClient: primaryClient(p.Memory), MongoURI: c.secrets.mongoURI, ControlDB: c.ControlDB, Clock: p.Clock, Logger: p.Logger, Who: "kvshadow-proxy"})
}

// OpenDemo serves an emulated Workers KV account on loopback (the kvapi
// emulator over memory, reached over HTTP through cfkv, as Workers KV would
// be) and keeps the shadow and the board in memory.
func OpenDemo(_ context.Context, c *Config, p Plumbing) (*Backends, error) {
	clk := p.Clock
	em, err := kvapi.Emulate(kvapi.Config{AccountID: c.Account, Token: c.secrets.cfToken, Clock: clk}, c.ids()...)
	if err != nil {
		return nil, err
	}
	url := em.URL
	// No MongoDB: the connection gauges say 0.
	b := &Backends{Board: control.NewMemoryBoard(), Ledger: control.NewMemoryLedger(), Pool: &mongokv.Pool{},
		Note: "demo: the primary is an emulated Workers KV account at " + url + "; the shadow and the stage are kept in memory and lost at exit. " +
			"Not a tee check (it compares with this emulator, which a Worker never wrote): make tee-check BOT=path/to/worker"}
	b.Closers = append(b.Closers, em.Stop)
	for _, ns := range c.Namespaces {
		primary, err := cfkv.New(cfkv.Config{AccountID: c.Account, NamespaceID: ns.ID, APIToken: c.secrets.cfToken, BaseURL: url, Clock: clk,
			HTTPClient: primaryClient(p.Memory)})
		if err != nil {
			return nil, errors.Join(err, b.Close(context.Background()))
		}
		b.Sides = append(b.Sides, Sides{ID: ns.ID, Primary: primary, Shadow: memory.New(memory.Config{Clock: clk}), ShadowSystem: otelkv.SystemMemory})
	}
	return b, nil
}
