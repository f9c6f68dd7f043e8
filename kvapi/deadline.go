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
// be answered, d after its handler starts (net/http set the connection's
// write deadline, a margin later, just before). A context that ends no
// later already is kept.
func withDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now().Add(d)
		parent := r.Context()
		if cur, ok := parent.Deadline(); ok && !cur.After(at) {
			h.ServeHTTP(w, r)
			return
		}
		ec, _ := parent.Value(connKey{}).(*envelopeConn)
		if ec == nil || r.ProtoMajor != 1 {
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
