package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/kvapi"
	"github.com/kvshadow/kvshadow/tests/mongotest"
)

const (
	demoAccount   = "demo-account"
	demoNamespace = "miti99bot-kv"
	// The token is a throwaway that guards the loopback emulator; it is
	// never printed.
	demoToken = "demo-token-not-a-secret"
	database  = "miti99bot"
	// botLocation is the Workers KV "location" the bot reads from: it
	// sees its own writes at once and others' only after the window.
	botLocation = "bot-edge"
)

// servers are the two stores of the migration, as a bot would reach them.
type servers struct {
	stopKV  func(context.Context) error
	baseURL string

	mongo  *mongotest.Server
	client *mongokv.Client
}

// startServers starts the Workers KV emulator and the embedded
// MongoDB-compatible server.
func startServers(ctx context.Context, cfg config) (*servers, error) {
	s := &servers{}
	faults := &kvapi.Faults{}
	faults.SetLatency(cfg.latency)
	faults.SetConsistencyWindow(cfg.window)
	em, err := kvapi.Emulate(kvapi.Config{AccountID: demoAccount, Token: demoToken, Faults: faults}, demoNamespace)
	if err != nil {
		return nil, err
	}
	s.baseURL, s.stopKV = em.URL, em.Stop

	mongoDir := filepath.Join(cfg.dir, "mongo")
	if err := os.RemoveAll(mongoDir); err != nil {
		s.Close()
		return nil, err
	}
	// The demo always embeds its server: it wipes its data at start, which
	// it must never do to a MONGODB_URI that names a real database.
	s.mongo, err = mongotest.Start(ctx, mongotest.Config{Dir: mongoDir, IgnoreEnv: true})
	if err != nil {
		s.Close()
		return nil, err
	}
	s.client, err = mongokv.NewClient(mongokv.ClientConfig{
		URI:                    s.mongo.URI(),
		ServerSelectionTimeout: 2 * time.Second,
		Logger:                 slog.New(slog.DiscardHandler),
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// workersKV returns a client of the emulator. A located client reads through
// the bot's edge location, with its consistency window; an unlocated one
// sees every write at once, as the report and the injector should.
func (s *servers) workersKV(located bool) (*cfkv.Store, error) {
	cfg := cfkv.Config{
		AccountID:    demoAccount,
		NamespaceID:  demoNamespace,
		APIToken:     demoToken,
		BaseURL:      s.baseURL,
		RetryBackoff: 50 * time.Millisecond,
	}
	if located {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		cfg.HTTPClient = &http.Client{Transport: locatedTransport{base: tr, location: botLocation}}
	}
	return cfkv.New(cfg)
}

func (s *servers) mongoDB() (*mongokv.Store, error) {
	return s.client.Store(mongokv.Config{Database: database})
}

func (s *servers) Close() error {
	var errs []error
	if s.client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, s.client.Close(ctx))
		cancel()
	}
	if s.mongo != nil {
		errs = append(errs, s.mongo.Close())
	}
	if s.stopKV != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, s.stopKV(ctx))
		cancel()
	}
	return errors.Join(errs...)
}

type locatedTransport struct {
	base     http.RoundTripper
	location string
}

func (t locatedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(kvapi.LocationHeader, t.location)
	return t.base.RoundTrip(r)
}
