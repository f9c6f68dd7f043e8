package assembly

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/internal/storeerr"
	"github.com/kvshadow/kvshadow/kv"
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

// Backends are what an instance runs over: the stores of every namespace,
// in order, and the control board.
type Backends struct {
	Sides []Sides
	Board control.Board
	// Ledger keeps the report runs and the settle sets' overflows, beside
	// the Board; nil keeps none.
	Ledger control.Ledger
	// Pool counts the MongoDB connections of the driver clients (the
	// shadow's, the board's), for the connection gauges; nil reports none.
	Pool *mongokv.Pool
	// Closers release them, last first.
	Closers []func(context.Context) error
	// Note is a line a banner prints about them.
	Note string
	// Pairing is what they pair, for the stage document (control.Read);
	// zero checks nothing.
	Pairing control.Pairing
	// URIDatabase is the database MONGODB_URI names, "" when none.
	URIDatabase string
}

// Close runs the closers, last first, once.
func (b *Backends) Close(ctx context.Context) error {
	var errs []error
	for i := len(b.Closers) - 1; i >= 0; i-- {
		errs = append(errs, b.Closers[i](ctx))
	}
	b.Closers = nil
	return errors.Join(errs...)
}

// Namespace is one Workers KV namespace and the MongoDB database of its
// keys ("" means mongokv.DefaultDatabase, the bot's).
type Namespace struct{ ID, Database string }

// Settings are what OpenBackends reaches the stores with.
type Settings struct {
	Account    string
	Namespaces []Namespace
	CFToken    string
	PrimaryURL string // the API root; "" means Cloudflare's
	// MaxRetries and MaxBulkWrite are the primary's (cfkv.Config).
	MaxRetries, MaxBulkWrite int
	// HTTPClient is the primary's; nil means one over cfkv's transport,
	// whose idle connections Close ends.
	HTTPClient *http.Client
	MongoURI   string
	// ControlDB is the board's database; "" means the first namespace's.
	ControlDB string
	Clock     clock.Clock
	Logger    *slog.Logger
	Who       string // the warnings' prefix: "kvshadow-proxy", "botkv"
}

// OpenBackends opens Workers KV (or the API at PrimaryURL) through cfkv
// and MongoDB through mongokv, with the control board in MongoDB, on the
// process's MongoDB clients for the URI (see the package doc). It does no
// I/O: the clients connect on first use, and again after a failure.
func OpenBackends(s Settings) (*Backends, error) {
	sh, err := share(s.MongoURI, s.Logger)
	if err != nil {
		return nil, err
	}
	b := &Backends{Pool: &sh.pool, Closers: []func(context.Context) error{sh.release}, Pairing: control.Pairing{Account: s.Account}}
	hc := s.HTTPClient
	if hc == nil {
		t := cfkv.NewTransport()
		hc = &http.Client{Transport: t}
		b.Closers = append(b.Closers, func(context.Context) error { t.CloseIdleConnections(); return nil })
	}
	var dbs, used []string
	for _, ns := range s.Namespaces {
		primary, err := cfkv.New(cfkv.Config{AccountID: s.Account, NamespaceID: ns.ID, APIToken: s.CFToken, BaseURL: s.PrimaryURL,
			MaxRetries: s.MaxRetries, MaxBulkWrite: s.MaxBulkWrite, Clock: s.Clock, HTTPClient: hc})
		if err != nil {
			return nil, errors.Join(err, b.Close(context.Background()))
		}
		database := cmp.Or(ns.Database, mongokv.DefaultDatabase)
		shadow, err := sh.client.Store(mongokv.Config{Database: database, Clock: s.Clock})
		if err != nil {
			return nil, errors.Join(fmt.Errorf("the database %q: %w", database, err), b.Close(context.Background()))
		}
		used = append(used, database)
		b.Pairing.Namespaces = append(b.Pairing.Namespaces, control.Namespace{ID: ns.ID, Database: database})
		b.Sides = append(b.Sides, Sides{ID: ns.ID, Primary: primary, Shadow: shadow,
			PrimaryAt: fmt.Sprintf("Workers KV (account %s, namespace %s%s)", s.Account, ns.ID, storeerr.AtHost(s.PrimaryURL)),
			ShadowAt:  "MongoDB at " + storeerr.MongoHosts(s.MongoURI)})
		dbs = append(dbs, ns.ID+" -> "+database)
	}
	b.URIDatabase = sh.client.URIDatabase()
	if named := b.URIDatabase; named != "" && len(used) > 0 && !slices.Contains(used, named) && s.Logger != nil {
		s.Logger.Warn(fmt.Sprintf("%s: MONGODB_URI names the database %q, but the shadow is %q (the bot's MongoKVStore opens %q whatever its URI says); "+
			"if the bot really uses %q, set MONGODB_DB=%s", s.Who, named, used[0], mongokv.DefaultDatabase, named, named))
	}
	db := sh.board.Database(cmp.Or(s.ControlDB, used[0]))
	board := control.NewMongoBoard(db)
	b.Board, b.Ledger = board, board
	b.Note = "shadow: MongoDB database " + strings.Join(dbs, ", ") + "; stage control documents in " + db.Name()
	return b, nil
}

// shared is the process's MongoDB clients for one URI (see the package doc).
type shared struct {
	uri    string
	client *mongokv.Client
	board  *mongo.Client
	pool   mongokv.Pool
	refs   int
}

var (
	sharedMu sync.Mutex
	clients  = map[string]*shared{}
)

// share returns the URI's clients, opening them on first use, with one
// more reference.
func share(uri string, log *slog.Logger) (*shared, error) {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sh := clients[uri]; sh != nil {
		sh.refs++
		return sh, nil
	}
	sh := &shared{uri: uri, refs: 1}
	c, err := mongokv.NewClient(mongokv.ClientConfig{URI: uri, Logger: log, Options: sh.pool.Watch(nil)})
	if err != nil {
		return nil, err
	}
	opts := options.Client().ApplyURI(uri).SetPoolMonitor(sh.pool.Monitor())
	if opts.ServerSelectionTimeout == nil { // the URI's, else mongokv's
		opts.SetServerSelectionTimeout(mongokv.DefaultServerSelectionTimeout)
	}
	bc, err := mongo.Connect(opts)
	if err != nil {
		_ = c.Close(context.Background())
		return nil, errors.New("mongokv: the driver refuses the URI")
	}
	sh.client, sh.board = c, bc
	clients[uri] = sh
	return sh, nil
}

// release drops a reference; the last closes the clients, within
// closeWait.
func (sh *shared) release(ctx context.Context) error {
	sharedMu.Lock()
	sh.refs--
	last := sh.refs == 0
	if last {
		delete(clients, sh.uri)
	}
	sharedMu.Unlock()
	if !last {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeWait)
	defer cancel()
	return errors.Join(sh.board.Disconnect(ctx), sh.client.Close(ctx))
}
