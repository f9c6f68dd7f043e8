package kvapi

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// Fair admission (the bounds are in the package doc). A client is its remote
// address: every client of a front shares its one token, which names no one,
// and a client must not earn more slots by sending wrong tokens. A slow body
// ends with 408 so that its slot comes back within seconds, not at ReadTimeout.

// The defaults of the zero ServeConfig's admission.
const (
	// DefaultMinBodyRate is the least rate, in bytes a second, a body may
	// average once DefaultBodyGrace has passed: a dial-up line sends 5 KiB/s.
	DefaultMinBodyRate = 1 << 10
	// DefaultBodyGrace is how long a body may take before its rate counts.
	DefaultBodyGrace = 10 * time.Second
)

// ErrSlowBody reports a body that came slower than the minimum rate.
var ErrSlowBody = errors.New("kvapi: the request body arrives slower than the minimum rate")

type admission struct {
	max, perClient int
	key            func(*http.Request) string
	rate           int
	grace, read    time.Duration // read: the server's ReadTimeout, which a body deadline never passes

	mu    sync.Mutex
	total int
	held  map[string]int
}

// RemoteHost is the default client key: the request's remote address
// without its port.
func RemoteHost(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// take books a slot for client, or says why it cannot.
func (a *admission) take(client string) (ok bool, perClient bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.total >= a.max:
		return false, false
	case a.held[client] >= a.perClient:
		return false, true
	}
	a.total++
	a.held[client]++
	return true, false
}

func (a *admission) give(client string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.total--
	if a.held[client]--; a.held[client] <= 0 {
		delete(a.held, client)
	}
}

// serve admits r, or answers 503 with Retry-After at once.
func (a *admission) serve(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		markServing(r)
		client := a.key(r)
		ok, perClient := a.take(client)
		if !ok {
			msg := "service temporarily unavailable: too many requests at once"
			if perClient {
				msg = "service temporarily unavailable: this client holds its share of the requests served at once"
			}
			e := errorf(http.StatusServiceUnavailable, CodeUnavailable, "%s", msg)
			e.retryAfter = OverloadRetryAfter
			if r.ContentLength != 0 {
				// Unread, the body would be read before the answer is
				// sent, as slowly as the client sends it.
				w.Header().Set("Connection", "close")
			}
			writeError(w, e)
			return
		}
		defer a.give(client)
		if r.Body == nil || r.Body == http.NoBody || a.rate <= 0 {
			h.ServeHTTP(w, r)
			return
		}
		// The writer and the body are one allocation.
		pw := &pacedWriter{guardedWriter: guardedWriter{ResponseWriter: w}}
		pw.body = paced{ReadCloser: r.Body, w: &pw.guardedWriter, start: time.Now(), a: a}
		// The server has no ReadTimeout of its own (NewHTTPServer): the first
		// byte's deadline bounds a body from the start, read or not (net/http
		// discards an unread one after the handler).
		pw.body.arm()
		body := r.Body
		defer func() { r.Body = body }() // see restoreBody
		r.Body = &pw.body
		h.ServeHTTP(&pw.guardedWriter, r)
	})
}

type pacedWriter struct {
	guardedWriter
	body paced
}

// paced is a body that must keep the minimum rate: each read gets a
// deadline by which one more byte must have come for the average to hold
// (set only when it moves: each change wakes the runtime's poller).
// Deadlines are the connection's, on the system clock. Once the body has
// ended its reads touch the connection no more: net/http, when the body
// ends, clears the deadline to watch the idle connection for the client
// going away, and a deadline set again would end the request when it
// passed, however long the handler still works.
type paced struct {
	io.ReadCloser
	w     *guardedWriter
	start time.Time
	n     int64
	a     *admission
	err   error     // what ended the body
	due   time.Time // the connection's read deadline, as arm last set it
}

// arm sets the read deadline by which the next byte must come.
func (p *paced) arm() {
	due := p.start.Add(p.a.grace + time.Duration(float64(p.n+1)/float64(p.a.rate)*float64(time.Second)))
	if end := p.start.Add(p.a.read); p.a.read > 0 && end.Before(due) {
		due = end
	}
	if !due.Equal(p.due) {
		p.due = due
		_ = http.NewResponseController(p.w.ResponseWriter).SetReadDeadline(due)
	}
}

func (p *paced) Read(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	p.arm()
	n, err := p.ReadCloser.Read(b)
	p.n += int64(n)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		p.w.refuse(p.a.rate)
		err = ErrSlowBody
	}
	p.err = err
	return n, err
}

// guardedWriter is the handler's ResponseWriter once its body may be cut
// off: after the 408, what the handler writes goes nowhere.
type guardedWriter struct {
	http.ResponseWriter
	done bool
}

func (g *guardedWriter) refuse(rate int) {
	if g.done {
		return
	}
	g.done = true
	g.ResponseWriter.Header().Set("Connection", "close")
	writeError(g.ResponseWriter, errorf(http.StatusRequestTimeout, CodeInvalidRequest,
		"request timeout: the body came slower than %s bytes a second", strconv.Itoa(rate)))
}

func (g *guardedWriter) Header() http.Header {
	if g.done {
		return http.Header{}
	}
	return g.ResponseWriter.Header()
}

func (g *guardedWriter) WriteHeader(status int) {
	if !g.done {
		g.ResponseWriter.WriteHeader(status)
	}
}

func (g *guardedWriter) Write(b []byte) (int, error) {
	if g.done {
		return len(b), nil
	}
	return g.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (g *guardedWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// restoreBody returns what puts r's body back: net/http, once the handler
// returns, looks at the body it made to tell whether the rest of it is
// worth reading (a small rest is, to keep the connection) or not (a large
// one; a wrapper of its body would have it read all of it).
func restoreBody(r *http.Request) func() {
	body := r.Body
	return func() { r.Body = body }
}
