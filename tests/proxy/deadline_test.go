package proxy_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// TestPrimaryOutlivingTheWriteDeadline: through the proxy, a write whose
// primary does not answer before the front's deadline (--write-timeout,
// less its margin) is answered 503 10001 with Retry-After, a refusal
// cloudflare-go retries, before the connection's write deadline; its key,
// whose write may or may not have reached the primary, is marked dirty for
// repair. The primary holds every request until the proxy gives up on it.
func TestPrimaryOutlivingTheWriteDeadline(t *testing.T) {
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	em := newEmulator(t, clk)
	in := startOverMemoryShadow(t, em.url, []string{"--stage", "dualwrite", "--write-timeout", "4s"})
	// Once started, the primary holds every request on the fake clock, until
	// the request ends (a start whose check of the primary is never answered
	// waits out that check's timeout first, 16 s, which this test is not about).
	em.api.Faults().SetLatency(time.Hour)
	t.Cleanup(func() { // release what the repair of the key sent the primary
		em.api.Faults().SetLatency(0)
		clk.Advance(time.Hour)
	})
	err := in.client(t, clk).Put(t.Context(), "k", []byte("v"), kv.PutOptions{})
	var ae *cfkv.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || ae.Code != kvapi.CodeUnavailable {
		t.Fatalf("the write failed with %v, want the front's 503 %d", err, kvapi.CodeUnavailable)
	}
	if ns := in.stats(t).Namespaces[namespace]; ns.Dirty != 1 {
		t.Fatalf("%d keys dirty, want the one whose write is in doubt", ns.Dirty)
	}
}
