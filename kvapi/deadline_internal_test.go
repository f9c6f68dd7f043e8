package kvapi

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestDeadlineAllocations holds what giving a request its deadline costs,
// on a connection the front accepted: the timer context with its timer,
// their two functions, and the request's copy that carries it (the context
// detached from net/http's cancellation is made once a connection; 8 when
// derived from net/http's own context, which then makes its channel and
// children map).
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
	if allocs > 5 {
		t.Errorf("a request's deadline allocates %v times, want at most 5", allocs)
	}
}

// TestPacedBodyAllocations holds what the slow-body guard costs a request
// with a body: its writer and its body, one allocation, and nothing a read
// (the ResponseController that sets each read's deadline stays on the
// stack; kept in the body it was an allocation a request more).
func TestPacedBodyAllocations(t *testing.T) {
	a := &admission{max: 1, perClient: 1, key: RemoteHost, rate: DefaultMinBodyRate, grace: DefaultBodyGrace, held: map[string]int{}}
	buf := make([]byte, 4)
	h := a.serve(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		for {
			if _, err := r.Body.Read(buf); err != nil {
				return
			}
		}
	}))
	body := &rewindable{Reader: strings.NewReader("")}
	req, err := http.NewRequest(http.MethodPut, "http://front/", body)
	if err != nil {
		t.Fatal(err)
	}
	req.RemoteAddr = "192.0.2.1:1234"
	w := &deadlineWriter{httptest.NewRecorder()}
	allocs := testing.AllocsPerRun(100, func() {
		body.Reset("a value of some bytes")
		req.Body = body
		h.ServeHTTP(w, req)
	})
	if allocs > 1 {
		t.Errorf("a paced body read 4 bytes at a time allocates %v times, want 1", allocs)
	}
}

type rewindable struct{ *strings.Reader }

// deadlineWriter is a ResponseWriter whose connection takes read deadlines.
type deadlineWriter struct{ http.ResponseWriter }

func (deadlineWriter) SetReadDeadline(time.Time) error { return nil }

func (rewindable) Close() error { return nil }

// TestAHandlerReachedLateIsStillAnswered: a request's handler that starts
// well after net/http set the connection's write deadline (here 1 s, more
// than the 500 ms margin of a 5 s write deadline) gets a context that ends
// the margin before that deadline, not a margin after it, so its answer is
// still written; counted from the handler's start, the answer came after
// the write deadline and the client saw the connection torn.
func TestAHandlerReachedLateIsStillAnswered(t *testing.T) {
	const write, late = 5 * time.Second, time.Second
	answer := withDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // a store that takes until the deadline
		w.WriteHeader(http.StatusServiceUnavailable)
	}), write)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(late) // what comes between the header's read and the handler
			answer.ServeHTTP(w, r)
		}),
		WriteTimeout: write, ConnContext: connContext, ConnState: connState,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(envelopeListener{ln}) }()
	t.Cleanup(func() { _ = srv.Close() })
	resp, err := (&http.Client{Timeout: 3 * write}).Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("answered %d, want the handler's 503", resp.StatusCode)
	}
}
