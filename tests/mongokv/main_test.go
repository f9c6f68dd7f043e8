package mongokv_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/tests/mongotest"
)

// srv is the server every test of the package shares; each test works in
// databases of its own.
var srv *mongotest.Server

func TestMain(m *testing.M) { mongotest.Main(m, &srv) }

// newClient returns a Client over cfg (the shared server's URI when cfg has
// none, and no logs when it has no Logger), closed when the test ends.
func newClient(tb testing.TB, cfg mongokv.ClientConfig) *mongokv.Client {
	tb.Helper()
	if cfg.URI == "" {
		cfg.URI = srv.URI()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := mongokv.NewClient(cfg)
	if err != nil {
		tb.Fatalf("NewClient: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return c
}

// newStore returns a Store on a fresh database of the shared server.
func newStore(tb testing.TB, c *mongokv.Client, cfg mongokv.Config) *mongokv.Store {
	tb.Helper()
	if cfg.Database == "" {
		cfg.Database = srv.Database(tb)
	}
	s, err := c.Store(cfg)
	if err != nil {
		tb.Fatalf("Store: %v", err)
	}
	return s
}

// logSink is a slog handler that keeps every record as text.
type logSink struct {
	mu   sync.Mutex
	recs []string
}

func (l *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (l *logSink) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	l.mu.Lock()
	l.recs = append(l.recs, b.String())
	l.mu.Unlock()
	return nil
}
func (l *logSink) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logSink) WithGroup(string) slog.Handler      { return l }

func (l *logSink) records() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.recs...)
}

// count returns how many records contain substr.
func (l *logSink) count(substr string) int {
	n := 0
	for _, r := range l.records() {
		if strings.Contains(r, substr) {
			n++
		}
	}
	return n
}
