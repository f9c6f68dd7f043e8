package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/internal/storeerr"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/otelkv"
	"github.com/kvshadow/kvshadow/kvapi"
	"github.com/kvshadow/kvshadow/membudget"
)

// Sides are one namespace's two stores.
type Sides struct {
	ID              string
	Primary, Shadow kv.Store
	// PrimarySystem and ShadowSystem name them on spans and metrics
	// (otelkv's System names); "" means Workers KV and MongoDB.
	PrimarySystem, ShadowSystem string
	// PrimaryAt and ShadowAt name them in a one-line message, without a
	// secret ("Workers KV (account A, namespace N at host)", "MongoDB at
	// host:27017"); "" means the role alone.
	PrimaryAt, ShadowAt string
}

// Backends are what the service runs over: the stores of every namespace
// in Config.Namespaces, in that order, and the control board.
type Backends struct {
	Sides []Sides
	Board control.Board
	// Ledger keeps the report runs and the settle sets' overflows, beside
	// the Board; nil keeps none (POST /reconciliation answers 404).
	Ledger control.Ledger
	// Pool counts the MongoDB connections of every driver client opened
	// (the shadow's, the board's), for the connection gauges; nil reports
	// none.
	Pool *mongokv.Pool
	// Closers release them once the service has stopped, last first.
	Closers []func(context.Context) error
	// Note is a line the banner prints about them.
	Note string
}

// Close runs the closers, last first.
func (b *Backends) Close(ctx context.Context) error {
	var errs []error
	for i := len(b.Closers) - 1; i >= 0; i-- {
		errs = append(errs, b.Closers[i](ctx))
	}
	return errors.Join(errs...)
}

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
	clk := p.Clock
	b := &Backends{Pool: &mongokv.Pool{}}
	var dbs []string  // namespace -> the MongoDB database its shadow uses
	var used []string // those databases
	client, err := mongokv.NewClient(mongokv.ClientConfig{URI: c.secrets.mongoURI, Logger: p.Logger, Options: b.Pool.Watch(nil)})
	if err != nil {
		return nil, err
	}
	b.Closers = append(b.Closers, client.Close)
	for _, ns := range c.Namespaces {
		primary, err := cfkv.New(cfkv.Config{AccountID: c.Account, NamespaceID: ns.ID, APIToken: c.secrets.cfToken, BaseURL: c.PrimaryURL, Clock: clk,
			HTTPClient: primaryClient(p.Memory)})
		if err != nil {
			return nil, errors.Join(err, b.Close(ctx))
		}
		database := databaseOf(ns)
		used = append(used, database)
		shadow, err := client.Store(mongokv.Config{Database: database, Clock: clk})
		if err != nil {
			return nil, errors.Join(err, b.Close(ctx))
		}
		b.Sides = append(b.Sides, Sides{ID: ns.ID, Primary: primary, Shadow: shadow,
			PrimaryAt: fmt.Sprintf("Workers KV (account %s, namespace %s%s)", c.Account, ns.ID, storeerr.AtHost(c.PrimaryURL)),
			ShadowAt:  "MongoDB at " + storeerr.MongoHosts(c.secrets.mongoURI)})
		dbs = append(dbs, ns.ID+" -> "+shadow.Database())
	}
	if named := client.URIDatabase(); named != "" && len(used) > 0 && !slices.Contains(used, named) && p.Logger != nil {
		p.Logger.Warn(databaseWarning(named, used[0]))
	}
	// No connect here: the client connects on first use, and again after
	// a failure, so that an instance starts with MongoDB down (Run's start
	// probe says so) and takes it back when it answers.
	// The board reads and writes two small collections; the driver is
	// mongokv's own, with a pool of its own.
	boardClient, err := mongo.Connect(options.Client().ApplyURI(c.secrets.mongoURI).SetServerSelectionTimeout(mongokv.DefaultServerSelectionTimeout).
		SetPoolMonitor(b.Pool.Monitor()))
	if err != nil {
		return nil, errors.Join(errors.New("connecting to MongoDB for the control board: the URI is refused"), b.Close(ctx))
	}
	b.Closers = append(b.Closers, boardClient.Disconnect)
	db := cmp.Or(c.ControlDB, c.Namespaces[0].Database, mongokv.DefaultDatabase)
	board := control.NewMongoBoard(boardClient.Database(db))
	b.Board, b.Ledger = board, board
	b.Note = "shadow: MongoDB database " + strings.Join(dbs, ", ") + "; stage control documents in " + db
	return b, nil
}

// databaseWarning is said at start when MONGODB_URI names a database other
// than the one the service opens: the bot's own store opens its database
// whatever the URI says, so following the URI would split the bot and the
// proxy and make every key diverge.
func databaseWarning(named, used string) string {
	return fmt.Sprintf("kvshadow-proxy: MONGODB_URI names the database %q, but the shadow is %q (the bot's MongoKVStore opens %q whatever its URI says); "+
		"if the bot really uses %q, set MONGODB_DB=%s (or --mongo-db)", named, used, mongokv.DefaultDatabase, named, named)
}

// OpenDemo serves an emulated Workers KV account on loopback (the kvapi
// emulator over memory, reached over HTTP through cfkv, as Workers KV would
// be) and keeps the shadow and the board in memory.
func OpenDemo(_ context.Context, c *Config, p Plumbing) (*Backends, error) {
	clk := p.Clock
	emulated := map[string]kv.Store{}
	for _, ns := range c.Namespaces {
		emulated[ns.ID] = memory.New(memory.Config{Clock: clk})
	}
	api, err := kvapi.New(kvapi.Config{Namespaces: emulated, AccountID: c.Account, Token: c.secrets.cfToken, Clock: clk})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	url := "http://" + ln.Addr().String() + "/client/v4/"
	// No MongoDB: the connection gauges say 0.
	b := &Backends{Board: control.NewMemoryBoard(), Ledger: control.NewMemoryLedger(), Pool: &mongokv.Pool{},
		Note: "demo: the primary is an emulated Workers KV account at " + url + "; the shadow and the stage are kept in memory and lost at exit. " +
			"Not a tee check (it compares with this emulator, which a Worker never wrote): make tee-check BOT=path/to/worker"}
	b.Closers = append(b.Closers, srv.Shutdown)
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
