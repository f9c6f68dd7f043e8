package membudget_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/membudget"
)

const mib = 1 << 20

func TestGrantsWaitAndRefuse(t *testing.T) {
	clk := clock.NewFake(time.Unix(1e9, 0))
	b, err := membudget.New(membudget.Config{Limit: 128 * mib, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if b.Limit() != 96*mib {
		t.Fatalf("Limit %d, want 96 MiB (a quarter reserved)", b.Limit())
	}
	ctx := context.Background()
	if err := b.Acquire(ctx, 90*mib); err != nil {
		t.Fatal(err)
	}
	if err := b.Acquire(ctx, 97*mib); !errors.Is(err, membudget.ErrExhausted) {
		t.Fatalf("more than the grants ever hold: %v", err)
	}
	// One that waits gets its bytes when they come back.
	got := make(chan error, 1)
	go func() { got <- b.Acquire(ctx, 10*mib) }()
	for clk.Timers() == 0 {
		time.Sleep(time.Millisecond) // until it waits
	}
	b.Release(90 * mib)
	if err := <-got; err != nil {
		t.Fatalf("after the release: %v", err)
	}
	// One that waits past the wait is refused, and counted.
	if err := b.Acquire(ctx, 80*mib); err != nil {
		t.Fatal(err)
	}
	go func() { got <- b.Acquire(ctx, 10*mib) }()
	for clk.Timers() == 0 {
		time.Sleep(time.Millisecond)
	}
	clk.Advance(membudget.DefaultWait)
	if err := <-got; !errors.Is(err, membudget.ErrExhausted) {
		t.Fatalf("past the wait: %v", err)
	}
	if b.Refused() != 2 || b.InUse() != 90*mib {
		t.Fatalf("refused %d, in use %d", b.Refused(), b.InUse())
	}
	if b.TryAcquire(10 * mib) {
		t.Fatal("TryAcquire past the limit")
	}
}

func TestHoldReaderChargesWhatIsRead(t *testing.T) {
	b, err := membudget.New(membudget.Config{Limit: 64 * mib, Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	h := b.Hold(context.Background())
	if _, err := io.ReadAll(h.Reader(strings.NewReader(strings.Repeat("x", mib)), 2)); err != nil {
		t.Fatal(err)
	}
	if b.InUse() != 2*mib {
		t.Fatalf("in use %d after reading 1 MiB at twice, want 2 MiB", b.InUse())
	}
	// A body past the budget fails the read.
	if _, err := io.ReadAll(h.Reader(strings.NewReader(strings.Repeat("x", 20*mib)), 2)); !errors.Is(err, membudget.ErrExhausted) {
		t.Fatalf("a body past the budget: %v", err)
	}
	h.Release()
	if b.InUse() != 0 {
		t.Fatalf("in use %d after Release", b.InUse())
	}
	var none *membudget.Budget
	if err := none.Acquire(context.Background(), 1<<40); err != nil || none.Limit() != 0 {
		t.Fatal("a nil Budget refuses")
	}
}

func TestTransportChargesResponseBodies(t *testing.T) {
	b, err := membudget.New(membudget.Config{Limit: 64 * mib, Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", 10*mib))
	}))
	defer srv.Close()
	hc := &http.Client{Transport: b.Transport(http.DefaultTransport, 4)}
	res, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(res.Body); !errors.Is(err, membudget.ErrExhausted) || !errors.Is(err, kv.ErrTooLarge) {
		t.Fatalf("a 10 MiB answer at four times, with 32 MiB to grant: %v, want ErrTooLarge (ask for less)", err)
	}
	res.Body.Close()
	if b.InUse() != 0 {
		t.Fatalf("in use %d after the body was closed", b.InUse())
	}
	hc = &http.Client{Transport: b.Transport(http.DefaultTransport, 2)}
	res, err = hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, res.Body); err != nil || n != 10*mib || b.InUse() != 20*mib {
		t.Fatalf("read %d, %v; in use %d, want 20 MiB while open", n, err, b.InUse())
	}
	res.Body.Close()
	if b.InUse() != 0 {
		t.Fatalf("in use %d after Close", b.InUse())
	}
	// Refused while others hold the budget, an answer that would take
	// less than half of it waits and fails as exhausted (retry), not as
	// too large.
	if err := b.Acquire(context.Background(), 28*mib); err != nil {
		t.Fatal(err)
	}
	res, err = hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(res.Body); !errors.Is(err, membudget.ErrExhausted) || errors.Is(err, kv.ErrTooLarge) {
		t.Fatalf("a 20 MiB answer with 4 MiB free: %v, want ErrExhausted alone", err)
	}
	res.Body.Close()
	b.Release(28 * mib)
}
