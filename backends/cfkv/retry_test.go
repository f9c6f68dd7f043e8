package cfkv_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// run calls op in a goroutine and, while it waits on clk, moves clk on by
// step, so that a retry's wait passes without the test sleeping.
func run(clk *timerClock, step time.Duration, op func() error) error {
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = op()
	}()
	advanceWhenWaiting(clk.Fake, step, done)
	<-done
	return err
}

// TestRetryHonoursRetryAfter: the second write of a key within a second is
// refused with 429 and Retry-After: 1; the store waits exactly that and
// succeeds.
func TestRetryHonoursRetryAfter(t *testing.T) {
	clk := &timerClock{Fake: clock.NewFake(start)}
	r := newRig(t, clk, nil)
	r.server.Faults().SetWriteRateLimit(true)
	ctx := t.Context()
	if err := r.store.Put(ctx, "hot", []byte("1"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	err := run(clk, 100*time.Millisecond, func() error {
		return r.store.Put(ctx, "hot", []byte("2"), kv.PutOptions{})
	})
	if err != nil {
		t.Fatalf("Put retried after 429: %v", err)
	}
	if got := clk.waits(); !slices.Equal(got, []time.Duration{time.Second}) {
		t.Fatalf("the store waited %v, want exactly the server's Retry-After [1s]", got)
	}
	if n := r.server.Requests(); n != 3 {
		t.Fatalf("%d requests, want 3 (a put, a refused put, its retry)", n)
	}
	if v, _ := r.mem.Get(ctx, "hot"); string(v) != "2" {
		t.Fatalf("server holds %q, want the retried write", v)
	}
}

// TestUnavailableAfterRetries: 5xx answers are retried MaxRetries times,
// then reported as kv.ErrUnavailable with the server's retry hint.
func TestUnavailableAfterRetries(t *testing.T) {
	clk := &timerClock{Fake: clock.NewFake(start)}
	r := newRig(t, clk, func(c *cfkv.Config) { c.MaxRetries = 2 })
	r.server.Faults().FailNext(100, kvapi.Failure{Status: http.StatusBadGateway, RetryAfter: 2 * time.Second})
	err := run(clk, 500*time.Millisecond, func() error {
		_, err := r.store.Get(t.Context(), "k")
		return err
	})
	if !errors.Is(err, kv.ErrUnavailable) {
		t.Fatalf("Get against a failing API = %v, want kv.ErrUnavailable", err)
	}
	if ra, _ := kv.RetryAfter(err); ra != 2*time.Second {
		t.Fatalf("retry hint %s, want the server's 2s", ra)
	}
	var apiErr *cfkv.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadGateway {
		t.Fatalf("cause = %v, want the API's 502", err)
	}
	if n := r.server.Requests(); n != 3 {
		t.Fatalf("%d requests, want 3 (1 try + 2 retries)", n)
	}
	if got := clk.waits(); !slices.Equal(got, []time.Duration{2 * time.Second, 2 * time.Second}) {
		t.Fatalf("waits %v, want the server's Retry-After twice", got)
	}
}

// TestLongRetryAfterNotWaited: a Retry-After beyond MaxRetryWait is handed
// to the caller at once instead of holding it.
func TestLongRetryAfterNotWaited(t *testing.T) {
	clk := &timerClock{Fake: clock.NewFake(start)}
	r := newRig(t, clk, nil)
	r.server.Faults().FailNext(1, kvapi.Failure{Status: http.StatusServiceUnavailable, RetryAfter: time.Minute})
	err := r.store.Put(t.Context(), "k", []byte("v"), kv.PutOptions{})
	if ra, ok := kv.RetryAfter(err); !ok || ra != time.Minute {
		t.Fatalf("Put = %v; want kv.ErrUnavailable with retry after 1m", err)
	}
	if n, w := r.server.Requests(), clk.waits(); n != 1 || len(w) != 0 {
		t.Fatalf("%d requests and waits %v; want 1 request and no wait", n, w)
	}
}

// TestBackoffWithoutRetryAfter: with no hint from the server, the waits
// grow from RetryBackoff and stay under MaxRetryWait.
func TestBackoffWithoutRetryAfter(t *testing.T) {
	clk := &timerClock{Fake: clock.NewFake(start)}
	r := newRig(t, clk, func(c *cfkv.Config) {
		c.RetryBackoff, c.MaxRetryWait, c.MaxRetries = 100*time.Millisecond, 300*time.Millisecond, 4
	})
	r.server.Faults().FailNext(4, kvapi.Failure{Status: http.StatusInternalServerError})
	err := run(clk, 50*time.Millisecond, func() error {
		return r.store.Put(t.Context(), "k", []byte("v"), kv.PutOptions{})
	})
	if err != nil {
		t.Fatalf("Put after four 500s and four retries: %v", err)
	}
	waits := clk.waits()
	bounds := [][2]time.Duration{{50, 100}, {100, 200}, {150, 300}, {150, 300}}
	if len(waits) != len(bounds) {
		t.Fatalf("waits %v, want %d", waits, len(bounds))
	}
	for i, w := range waits {
		if lo, hi := bounds[i][0]*time.Millisecond, bounds[i][1]*time.Millisecond; w < lo || w > hi {
			t.Fatalf("wait %d = %s, want %s..%s (waits %v)", i, w, lo, hi, waits)
		}
	}
}

// TestConnectionRefused: no server at all is kv.ErrUnavailable.
func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	st, err := cfkv.New(cfkv.Config{
		AccountID: testAccount, NamespaceID: testNamespace, APIToken: testToken,
		BaseURL:      "http://" + addr + "/client/v4/",
		RetryBackoff: time.Millisecond, MaxRetryWait: 2 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"Get":    func() error { _, err := st.Get(t.Context(), "a/../b"); return err },
		"Put":    func() error { return st.Put(t.Context(), "k", []byte("v"), kv.PutOptions{}) },
		"List":   func() error { _, err := st.List(t.Context(), kv.ListOptions{}); return err },
		"PutMny": func() error { return st.PutMany(t.Context(), []kv.Entry{{Key: "k"}}) },
	} {
		err := call()
		if ra, ok := kv.RetryAfter(err); !ok || ra != kv.DefaultRetryAfter {
			t.Fatalf("%s with nothing listening = %v; want kv.ErrUnavailable, retry after %s", name, err, kv.DefaultRetryAfter)
		}
		if strings.Contains(err.Error(), "/client/v4/") {
			t.Fatalf("%s error quotes the request URL (and so the key): %v", name, err)
		}
	}
}

// TestCallerCancellation: a cancelled caller gets its context's error, not
// unavailability, and is not held by a retry wait.
func TestCallerCancellation(t *testing.T) {
	clk := &timerClock{Fake: clock.NewFake(start)}
	r := newRig(t, clk, nil)
	r.server.Faults().FailNext(100, kvapi.Failure{Status: http.StatusServiceUnavailable})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { _, err := r.store.Get(ctx, "k"); done <- err }()
	for clk.Timers() == 0 {
		runtime.Gosched() // until the store waits to retry
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || errors.Is(err, kv.ErrUnavailable) {
		t.Fatalf("Get cancelled while waiting to retry = %v; want the context's error", err)
	}
}
