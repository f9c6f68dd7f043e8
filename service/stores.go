package service

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/otelkv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// backends are the stores of every namespace, the control board, and what
// must be closed after them.
type backends struct {
	sides   []sides
	board   control.Board
	closers []func(context.Context) error
	// demoURL is the demo's emulated Workers KV API, when there is one.
	demoURL string
}

func (b *backends) close(ctx context.Context) error {
	var errs []error
	for i := len(b.closers) - 1; i >= 0; i-- {
		errs = append(errs, b.closers[i](ctx))
	}
	return errors.Join(errs...)
}

// connectTimeout bounds the connects made at start.
const connectTimeout = 15 * time.Second

// openBackends connects to Workers KV (or the API at PrimaryURL) and MongoDB,
// or starts the demo's in-process pair.
func openBackends(ctx context.Context, c *Config) (*backends, error) {
	if c.Demo {
		return openDemo(c)
	}
	b := &backends{}
	client, err := mongokv.NewClient(mongokv.ClientConfig{URI: c.secrets.mongoURI})
	if err != nil {
		return nil, err
	}
	b.closers = append(b.closers, client.Close)
	for _, ns := range c.Namespaces {
		primary, err := cfkv.New(cfkv.Config{AccountID: c.Account, NamespaceID: ns.ID, APIToken: c.secrets.cfToken, BaseURL: c.PrimaryURL})
		if err != nil {
			return nil, errors.Join(err, b.close(ctx))
		}
		shadow, err := client.Store(mongokv.Config{Database: ns.Database})
		if err != nil {
			return nil, errors.Join(err, b.close(ctx))
		}
		b.sides = append(b.sides, sides{id: ns.ID, primary: primary, shadow: shadow,
			primarySystem: otelkv.SystemCloudflareKV, shadowSystem: otelkv.SystemMongoDB})
	}
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := client.Connect(cctx); err != nil {
		return nil, errors.Join(fmt.Errorf("connecting to MongoDB: %w", err), b.close(ctx))
	}
	// The board reads and writes two small collections; the driver is
	// mongokv's own, with a pool of its own.
	boardClient, err := mongo.Connect(options.Client().ApplyURI(c.secrets.mongoURI).SetServerSelectionTimeout(mongokv.DefaultServerSelectionTimeout))
	if err != nil {
		return nil, errors.Join(errors.New("connecting to MongoDB for the control board: the URI is refused"), b.close(ctx))
	}
	b.closers = append(b.closers, boardClient.Disconnect)
	db := c.ControlDB
	if db == "" {
		if db = c.Namespaces[0].Database; db == "" {
			db = defaultDatabase(client)
		}
	}
	b.board = control.NewMongoBoard(boardClient.Database(db))
	return b, nil
}

// defaultDatabase is the database a mongokv Store gets without one: the
// URI's, else mongokv.DefaultDatabase.
func defaultDatabase(client *mongokv.Client) string {
	st, err := client.Store(mongokv.Config{})
	if err != nil {
		return mongokv.DefaultDatabase
	}
	return st.Database()
}

// openDemo serves an emulated Workers KV account on loopback (the kvapi
// emulator over memory, reached over HTTP through cfkv, as Workers KV would
// be) and keeps the shadow and the board in memory.
func openDemo(c *Config) (*backends, error) {
	emulated := map[string]kv.Store{}
	for _, ns := range c.Namespaces {
		emulated[ns.ID] = memory.New(memory.Config{})
	}
	api, err := kvapi.New(kvapi.Config{Namespaces: emulated, AccountID: c.Account, Token: c.secrets.cfToken})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	b := &backends{board: control.NewMemoryBoard(), demoURL: "http://" + ln.Addr().String() + "/client/v4/"}
	b.closers = append(b.closers, srv.Shutdown)
	for _, ns := range c.Namespaces {
		primary, err := cfkv.New(cfkv.Config{AccountID: c.Account, NamespaceID: ns.ID, APIToken: c.secrets.cfToken, BaseURL: b.demoURL})
		if err != nil {
			return nil, errors.Join(err, b.close(context.Background()))
		}
		b.sides = append(b.sides, sides{id: ns.ID, primary: primary, shadow: memory.New(memory.Config{}),
			primarySystem: otelkv.SystemCloudflareKV, shadowSystem: otelkv.SystemMemory})
	}
	return b, nil
}
