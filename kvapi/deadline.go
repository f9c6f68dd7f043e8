package kvapi

import (
	"context"
	"net"
	"net/http"
	"time"
)

// Every request's context has a deadline a margin before its connection's
// write deadline (answerWithin; why is in the package doc).
//
// It runs on every request, so it costs what it must: one context with its
// timer, and the request's copy that carries it. On a connection the front
// accepted itself (an envelopeConn, HTTP/1.x: one request at a time) the
// context is derived from the request's values only, not from net/http's
// cancellation, which would cost the request's own context a channel and a
// children map: the connection ends it instead, when a read from the client
// fails, as net/http does its own (the client went away, or the server
// closed), and the handler's return ends it as always.

// answerWithin is how long after its start a request's handler has to
// answer a connection whose write deadline is write away (MaxAnswerMargin).
func answerWithin(write time.Duration) time.Duration {
	return write - min(MaxAnswerMargin, write/10)
}

// withDeadline gives each request's context the deadline by which it must
// be answered: a margin before the write deadline net/http set on its
// connection (write after the request's header was read) when the
// connection is the front's own, so that the time between that read and
// the handler does not eat into the margin; else answerWithin(write) after
// the handler starts. A context that ends no later already is kept.
func withDeadline(h http.Handler, write time.Duration) http.Handler {
	d := answerWithin(write)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parent := r.Context()
		ec, _ := parent.Value(connKey{}).(*envelopeConn)
		if r.ProtoMajor != 1 {
			ec = nil // one request at a time only on HTTP/1.x
		}
		var at time.Time
		if due := ec.writeDeadline(); !due.IsZero() {
			at = due.Add(d - write)
		} else {
			at = time.Now().Add(d)
		}
		if cur, ok := parent.Deadline(); ok && !cur.After(at) {
			h.ServeHTTP(w, r)
			return
		}
		if ec == nil {
			ctx, cancel := context.WithDeadline(parent, at)
			defer cancel()
			h.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		ctx, cancel := context.WithDeadline(ec.detached(parent), at)
		ec.serve(cancel)
		defer ec.served(cancel)
		if parent.Err() != nil { // ended before the connection could tell
			cancel()
		}
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// detached is parent without its cancellation, made once a connection: its
// requests' contexts carry the connection's values only.
func (c *envelopeConn) detached(parent context.Context) context.Context {
	if c.base == nil {
		c.base = context.WithoutCancel(parent)
	}
	return c.base
}

// SetWriteDeadline records t, the deadline by which a request read last
// must be answered (net/http sets it after each request's header), with
// its monotonic reading, as the connection's own deadline counts.
func (c *envelopeConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.writeDue = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

// writeDeadline is the connection's write deadline, zero when none is set
// or c is not the front's (nil).
func (c *envelopeConn) writeDeadline() time.Time {
	if c == nil {
		return time.Time{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writeDue
}

// serve makes cancel what a failed read of the connection calls.
func (c *envelopeConn) serve(cancel context.CancelFunc) {
	c.mu.Lock()
	broken := c.broken
	if !broken {
		c.cancel = cancel
	}
	c.mu.Unlock()
	if broken {
		cancel()
	}
}

func (c *envelopeConn) served(cancel context.CancelFunc) {
	c.mu.Lock()
	c.cancel = nil
	c.mu.Unlock()
	cancel()
}

// Read ends the context of the request being served when a read fails, as
// net/http ends its own: the client went away or the connection was
// closed. A timeout is not a failure here: net/http sets a deadline in the
// past to stop its own pending read, and a body that comes too slowly is
// refused by what set its deadline.
func (c *envelopeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		// Read as net/http reads it (errors.As would allocate on the
		// timeout that ends every request's pending read).
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			c.readFailed()
		}
	}
	return n, err
}

func (c *envelopeConn) readFailed() {
	c.mu.Lock()
	c.broken = true
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
