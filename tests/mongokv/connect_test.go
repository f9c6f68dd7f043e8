package mongokv_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/kv"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// secret is planted as the password of URIs: no error and no log line may
// ever show it.
const secret = "PLANTED-PASSWORD-7c1e"

func noSecret(t *testing.T, what, text string) {
	t.Helper()
	if strings.Contains(text, secret) {
		t.Errorf("%s shows the URI's password: %s", what, text)
	}
}

func noSecretInLogs(t *testing.T, logs *logSink) {
	t.Helper()
	for _, r := range logs.records() {
		noSecret(t, "log record", r)
	}
}

// closedPort returns a loopback port that nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

// everyOperation runs each operation of the store once and returns the
// errors by name.
func everyOperation(ctx context.Context, s *mongokv.Store) map[string]error {
	errs := map[string]error{}
	_, errs["Get"] = s.Get(ctx, "wordle:k")
	_, errs["GetEntry"] = s.GetEntry(ctx, "wordle:k")
	errs["Put"] = s.Put(ctx, "wordle:k", []byte("v"), kv.PutOptions{})
	errs["Delete"] = s.Delete(ctx, "wordle:k")
	_, errs["List"] = s.List(ctx, kv.ListOptions{})
	_, errs["List(module)"] = s.List(ctx, kv.ListOptions{Prefix: "wordle:"})
	_, errs["GetMany"] = s.GetMany(ctx, []string{"wordle:k"})
	errs["PutMany"] = s.PutMany(ctx, []kv.Entry{{Key: "wordle:k", Value: []byte("v")}})
	errs["DeleteMany"] = s.DeleteMany(ctx, []string{"wordle:k"})
	_, errs["Sweep"] = s.Sweep(ctx)
	return errs
}

// TestUnreachableServer: a server that cannot be selected within the
// configured timeout is kv.ErrUnavailable with the configured retry hint,
// for every operation, and neither errors nor logs show the password.
func TestUnreachableServer(t *testing.T) {
	logs := &logSink{}
	uri := "mongodb://kvshadow:" + secret + "@127.0.0.1:" + strconv.Itoa(closedPort(t)) + "/miti99bot?directConnection=true"
	c := newClient(t, mongokv.ClientConfig{
		URI:                    uri,
		ServerSelectionTimeout: 200 * time.Millisecond,
		RetryAfter:             7 * time.Second,
		Logger:                 slog.New(logs),
	})
	s := newStore(t, c, mongokv.Config{Database: "miti99bot"})
	errs := everyOperation(t.Context(), s)
	for op, err := range errs {
		if !errors.Is(err, kv.ErrUnavailable) {
			t.Errorf("%s = %v, want kv.ErrUnavailable", op, err)
			continue
		}
		if d, ok := kv.RetryAfter(err); !ok || d != 7*time.Second {
			t.Errorf("%s: retry after %v, %v; want 7s", op, d, ok)
		}
		if errors.Is(err, context.DeadlineExceeded) && t.Context().Err() != nil {
			t.Errorf("%s returned only when the test's context ended", op)
		}
		noSecret(t, op+" error", err.Error())
	}
	if n := logs.count("unreachable"); n != 1 {
		t.Errorf("%d operations' failed connects were logged %d times, want once for the outage:\n%s", len(errs), n, strings.Join(logs.records(), "\n"))
	}
	noSecretInLogs(t, logs)
}

// TestAFailedConnectIsItsCallersToSay: Connect's caller (a process at
// start) says a MongoDB that cannot be reached, with what it does about
// it; the Client logs nothing of it, nor of the operations' failed
// connects of the same outage after it (its reminder comes every 5
// minutes).
func TestAFailedConnectIsItsCallersToSay(t *testing.T) {
	logs := &logSink{}
	c := newClient(t, mongokv.ClientConfig{
		URI:                    "mongodb://127.0.0.1:" + strconv.Itoa(closedPort(t)) + "/?directConnection=true",
		ServerSelectionTimeout: 200 * time.Millisecond,
		Logger:                 slog.New(logs),
	})
	if err := c.Connect(t.Context()); !errors.Is(err, kv.ErrUnavailable) {
		t.Fatalf("Connect = %v, want kv.ErrUnavailable", err)
	}
	s := newStore(t, c, mongokv.Config{})
	for range 3 {
		if _, err := s.Get(t.Context(), "wordle:k"); !errors.Is(err, kv.ErrUnavailable) {
			t.Fatalf("Get = %v, want kv.ErrUnavailable", err)
		}
	}
	if recs := logs.records(); len(recs) != 0 {
		t.Errorf("the Client logged an outage its caller says:\n%s", strings.Join(recs, "\n"))
	}
}

// TestAuthFailure: a refused login is an error, not an unavailability,
// that matches kv.ErrAccessDenied (a proxy answers it 502), and shows no
// password.
func TestAuthFailure(t *testing.T) {
	u, err := url.Parse(srv.URI())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("kvshadow-test-nobody", secret)
	logs := &logSink{}
	c := newClient(t, mongokv.ClientConfig{URI: u.String(), ServerSelectionTimeout: 2 * time.Second, Logger: slog.New(logs)})
	s := newStore(t, c, mongokv.Config{})
	_, err = s.Get(t.Context(), "wordle:k")
	if err == nil || errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("Get with a wrong password = %v, want an error", err)
	}
	if !errors.Is(err, kv.ErrAccessDenied) || errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("Get with a wrong password = %v, want kv.ErrAccessDenied", err)
	}
	noSecret(t, "auth error", err.Error())
	noSecretInLogs(t, logs)
}

// TestInvalidOptions: a URI the driver refuses fails every call with an
// error that shows no secret, and is not an unavailability.
func TestInvalidOptions(t *testing.T) {
	logs := &logSink{}
	uri := "mongodb://u:" + secret + "@127.0.0.1:1/?connectTimeoutMS=soon&tlsCertificateKeyFilePassword=" + secret
	c := newClient(t, mongokv.ClientConfig{URI: uri, Logger: slog.New(logs)})
	s := newStore(t, c, mongokv.Config{})
	for op, err := range everyOperation(t.Context(), s) {
		if err == nil || errors.Is(err, kv.ErrUnavailable) {
			t.Errorf("%s = %v, want a configuration error", op, err)
			continue
		}
		noSecret(t, op+" error", err.Error())
	}
	noSecretInLogs(t, logs)
}

// TestConnectFailureThenRetry: a connect that fails is forgotten, and the
// next call connects with a new driver client.
func TestConnectFailureThenRetry(t *testing.T) {
	events := &driverEvents{}
	gate := &gateDialer{}
	gate.closed.Store(true)
	logs := &logSink{}
	c := newClient(t, mongokv.ClientConfig{
		ServerSelectionTimeout: 300 * time.Millisecond,
		Logger:                 slog.New(logs),
		Options: func(o *options.ClientOptions) {
			events.install(o)
			o.SetDialer(gate)
		},
	})
	s := newStore(t, c, mongokv.Config{})
	if _, err := s.Get(t.Context(), "wordle:k"); !errors.Is(err, kv.ErrUnavailable) {
		t.Fatalf("Get with the network down = %v, want kv.ErrUnavailable", err)
	}
	if gate.dials.Load() == 0 {
		t.Fatal("the dialer was never used")
	}
	if got := events.closed.Load(); got != 1 {
		t.Errorf("the failed driver client was closed %d times, want 1", got)
	}
	gate.closed.Store(false)
	if _, err := s.Get(t.Context(), "wordle:k"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("Get once the network is back = %v, want kv.ErrNotFound", err)
	}
	if err := s.Put(t.Context(), "wordle:k", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatalf("Put after the retry: %v", err)
	}
	if got := events.opened.Load(); got != 2 {
		t.Errorf("%d driver clients opened, want 2 (the failed one, the retry)", got)
	}
	if logs.count("unreachable") != 1 {
		t.Errorf("logs = %q, want one line for the failed connect", logs.records())
	}
}

// TestConcurrentFirstCallersShareOneConnect: callers that arrive while the
// client connects wait for the same connect, whether it fails or succeeds.
func TestConcurrentFirstCallersShareOneConnect(t *testing.T) {
	for _, down := range []bool{true, false} {
		name := map[bool]string{true: "failing", false: "succeeding"}[down]
		t.Run(name, func(t *testing.T) {
			events := &driverEvents{}
			gate := &gateDialer{}
			gate.closed.Store(down)
			var hooks sync.Mutex
			calls := 0
			c := newClient(t, mongokv.ClientConfig{
				ServerSelectionTimeout: 300 * time.Millisecond,
				Logger:                 slog.New(slog.DiscardHandler),
				Options: func(o *options.ClientOptions) {
					hooks.Lock()
					calls++
					hooks.Unlock()
					events.install(o)
					o.SetDialer(gate)
				},
			})
			s := newStore(t, c, mongokv.Config{})
			const callers = 16
			start := make(chan struct{})
			errs := make(chan error, callers)
			var wg sync.WaitGroup
			for range callers {
				wg.Go(func() {
					<-start
					_, err := s.Get(t.Context(), "wordle:k")
					errs <- err
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			want := kv.ErrNotFound
			if down {
				want = kv.ErrUnavailable
			}
			for err := range errs {
				if !errors.Is(err, want) {
					t.Errorf("Get = %v, want %v", err, want)
				}
			}
			if got := events.opened.Load(); got != 1 || calls != 1 {
				t.Errorf("%d callers opened %d driver clients (%d option hooks), want 1", callers, got, calls)
			}
		})
	}
}

// TestCallerGivesUpWhileConnecting: a caller whose context ends stops
// waiting; the connect it started goes on for the others.
func TestCallerGivesUpWhileConnecting(t *testing.T) {
	events := &driverEvents{}
	gate := &gateDialer{}
	gate.closed.Store(true)
	c := newClient(t, mongokv.ClientConfig{
		ServerSelectionTimeout: 300 * time.Millisecond,
		Logger:                 slog.New(slog.DiscardHandler),
		Options:                func(o *options.ClientOptions) { events.install(o); o.SetDialer(gate) },
	})
	s := newStore(t, c, mongokv.Config{})
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Get(gone, "wordle:k"); !errors.Is(err, context.Canceled) || errors.Is(err, kv.ErrUnavailable) {
		t.Fatalf("Get with a cancelled context = %v, want context.Canceled", err)
	}
	if err := c.Connect(t.Context()); !errors.Is(err, kv.ErrUnavailable) {
		t.Fatalf("Connect = %v, want kv.ErrUnavailable", err)
	}
	if got := events.opened.Load(); got != 1 {
		t.Errorf("%d driver clients opened, want the one connect both waited for", got)
	}
}

// TestClosedClient: every operation after Close is kv.ErrClosed.
func TestClosedClient(t *testing.T) {
	c, err := mongokv.NewClient(mongokv.ClientConfig{URI: srv.URI()})
	if err != nil {
		t.Fatal(err)
	}
	s := newStore(t, c, mongokv.Config{})
	if err := s.Put(t.Context(), "wordle:k", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := c.Close(t.Context()); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	for op, err := range everyOperation(t.Context(), s) {
		if !errors.Is(err, kv.ErrClosed) {
			t.Errorf("%s after Close = %v, want kv.ErrClosed", op, err)
		}
	}
	if err := s.RunSweeper(t.Context(), time.Minute); !errors.Is(err, kv.ErrClosed) {
		t.Errorf("RunSweeper after Close = %v, want kv.ErrClosed", err)
	}
}
