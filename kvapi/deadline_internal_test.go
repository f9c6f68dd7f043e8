package kvapi

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestDeadlineAllocations holds what giving a request its deadline costs,
// on a connection the front accepted: the context detached from net/http's
// cancellation, the timer context with its timer, their two functions, and
// the request's copy that carries it (8 when derived from net/http's own
// context, which then makes its channel and children map).
func TestDeadlineAllocations(t *testing.T) {
	var seen context.Context
	plain := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { seen = r.Context() })
	conn := context.WithValue(context.Background(), connKey{}, &envelopeConn{})
	req, err := http.NewRequest(http.MethodGet, "http://front/", http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	// Each request has a context of its own, as net/http makes one.
	serve := func(h http.Handler) float64 {
		return testing.AllocsPerRun(100, func() {
			ctx, cancel := context.WithCancel(conn)
			h.ServeHTTP(nil, req.WithContext(ctx))
			cancel()
		})
	}
	base := serve(plain)
	allocs := serve(withDeadline(plain, time.Minute)) - base
	if _, ok := seen.Deadline(); !ok || seen.Err() == nil {
		t.Fatalf("the handler's context has no deadline, or outlived the handler: %v", seen.Err())
	}
	if allocs > 6 {
		t.Errorf("a request's deadline allocates %v times, want at most 6", allocs)
	}
}
