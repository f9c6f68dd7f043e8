package h1_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/internal/h1"
)

// deadlineOnly has a deadline and cannot be cancelled (Done is nil), so
// only the connection's deadline can end a round trip under it.
type deadlineOnly struct {
	context.Context
	d time.Time
}

func (c deadlineOnly) Deadline() (time.Time, bool) { return c.d, true }
func (deadlineOnly) Done() <-chan struct{}         { return nil }
func (deadlineOnly) Err() error                    { return nil }

// stall is a handler that answers /warm at once, /headers with its
// headers and part of a body and /none with nothing, and then waits until
// the test ends; arrived says when it has the request.
type stall struct {
	arrived chan struct{}
	release chan struct{}
}

func newStall(t *testing.T, useTLS bool) (*server, *stall) {
	st := &stall{arrived: make(chan struct{}, 16), release: make(chan struct{})}
	s := newServer(t, useTLS, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/warm" {
			return
		}
		if r.URL.Path == "/headers" {
			_, _ = io.WriteString(w, "part")
			w.(http.Flusher).Flush()
		}
		st.arrived <- struct{}{}
		select {
		case <-st.release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(st.release) })
	return s, st
}

// returns runs f on another goroutine and fails the test if it has not
// returned long after it should have (a blocked read that nothing ends).
func returns(t *testing.T, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("still blocked: nothing ended the round trip")
		return nil
	}
}

func TestContextEndsABlockedRoundTrip(t *testing.T) {
	both(t, func(t *testing.T, useTLS bool) {
		for _, path := range []string{"/none", "/headers"} {
			for _, kind := range []string{"cancel", "deadline", "deadline only"} {
				t.Run(path+"/"+kind, func(t *testing.T) {
					s, st := newStall(t, useTLS)
					tr := s.transport(t, h1.Config{})
					get(t, tr, s.URL+"/warm") // so the round trip below runs on a pooled connection

					ctx, cancel := context.Background(), context.CancelFunc(func() {})
					want := context.DeadlineExceeded
					switch kind {
					case "cancel":
						ctx, cancel = context.WithCancel(ctx)
						want = context.Canceled
						go func() { <-st.arrived; cancel() }()
					case "deadline":
						ctx, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
					case "deadline only":
						ctx = deadlineOnly{ctx, time.Now().Add(50 * time.Millisecond)}
					}
					defer cancel()
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
					err := returns(t, func() error {
						resp, err := tr.RoundTrip(req)
						if err != nil {
							return err
						}
						_, err = io.ReadAll(resp.Body)
						return err
					})
					if !errors.Is(err, want) {
						t.Fatalf("err = %v, want %v", err, want)
					}
					// The connection of a cancelled round trip is closed,
					// never pooled: the next request dials.
					get(t, tr, s.URL+"/warm")
					if accepted, _, _ := s.counts(); accepted != 2 {
						t.Errorf("accepted %d connections, want 2", accepted)
					}
				})
			}
		}
	})
}

func TestCancelledBeforeTheRoundTrip(t *testing.T) {
	s := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {})
	tr := s.transport(t, h1.Config{})
	get(t, tr, s.URL)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}
