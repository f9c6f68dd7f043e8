package cfkv_test

import (
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

const (
	testAccount   = "0123456789abcdef0123456789abcdef"
	testNamespace = "fedcba9876543210fedcba9876543210"
	testToken     = "test-token-not-secret"
)

// start is a fixed instant for fake clocks.
var start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// rig is a Workers KV namespace served by kvapi over memory on a loopback
// HTTP server, and a cfkv store pointed at it; all share one clock.
type rig struct {
	mem    *memory.Store
	server *kvapi.Server
	url    string
	store  *cfkv.Store
}

// newRig starts a rig on clk; edit adjusts the store's config.
func newRig(t testing.TB, clk clock.Clock, edit func(*cfkv.Config)) *rig {
	t.Helper()
	mem := memory.New(memory.Config{Clock: clk})
	srv, err := kvapi.New(kvapi.Config{
		Namespaces: map[string]kv.Store{testNamespace: mem},
		AccountID:  testAccount,
		Token:      testToken,
		Clock:      clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	cfg := cfkv.Config{
		AccountID:   testAccount,
		NamespaceID: testNamespace,
		APIToken:    testToken,
		BaseURL:     hs.URL + "/client/v4/",
		HTTPClient:  hs.Client(),
		Clock:       clk,
	}
	if edit != nil {
		edit(&cfg)
	}
	st, err := cfkv.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{mem: mem, server: srv, url: hs.URL, store: st}
}

// timerClock is a fake clock that records the durations of the timers it
// makes, so a test can see how long the store chose to wait.
type timerClock struct {
	*clock.Fake
	mu     sync.Mutex
	timers []time.Duration
}

func (c *timerClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	c.timers = append(c.timers, d)
	c.mu.Unlock()
	return c.Fake.NewTimer(d)
}

func (c *timerClock) waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.timers...)
}

// advanceWhenWaiting moves clk forward by d each time a timer is pending,
// until done is closed: it stands in for time passing while a store waits
// to retry.
func advanceWhenWaiting(clk *clock.Fake, d time.Duration, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		default:
		}
		if clk.Timers() > 0 {
			clk.Advance(d)
		}
		runtime.Gosched()
	}
}
