package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// aLongTimeAgo is a deadline in the past: setting it makes a blocked read
// or write on the connection return at once.
var aLongTimeAgo = time.Unix(1, 0)

// conn is one HTTP/1.1 connection. Only the round trip that took it from
// the pool touches it, except abort, which a context's AfterFunc may call
// from another goroutine.
type conn struct {
	nc       net.Conn
	key      poolKey
	br       *bufio.Reader
	bw       *bufio.Writer
	tlsState *tls.ConnectionState
	// abortFn is abort as a func value, made once so that watching a
	// context does not allocate it per round trip.
	abortFn func()
	// deadline is the deadline last set on nc by its owner.
	deadline time.Time
	// idleSince is when the connection entered the pool; guarded by the
	// pool's lock.
	idleSince time.Time
	// used tells a reused connection, whose server may have closed it,
	// from a fresh one.
	used bool
	// nread counts the bytes read from nc, so that a failed round trip
	// knows whether any of its answer arrived; limit, when above zero, is
	// the count at which reading headers fails.
	nread int64
	limit int64
	// werr is the last write error of nc, telling a failure of the
	// connection from one of the request body's reader.
	werr error
}

func newReader(c *conn) *bufio.Reader { return bufio.NewReaderSize(c, 4<<10) }
func newWriter(c *conn) *bufio.Writer { return bufio.NewWriterSize(c, 4<<10) }

// Read reads from the network for the connection's bufio.Reader.
func (c *conn) Read(p []byte) (int, error) {
	if c.limit > 0 && c.nread >= c.limit {
		return 0, fmt.Errorf("%w: response headers exceed %d bytes", ErrProtocol, MaxHeaderBytes)
	}
	n, err := c.nc.Read(p)
	c.nread += int64(n)
	return n, err
}

// Write writes to the network for the connection's bufio.Writer.
func (c *conn) Write(p []byte) (int, error) {
	n, err := c.nc.Write(p)
	if err != nil {
		c.werr = err
	}
	return n, err
}

func (c *conn) close() { _ = c.nc.Close() }

// abort makes the connection's blocked read or write return now.
func (c *conn) abort() { _ = c.nc.SetDeadline(aLongTimeAgo) }

// watch arranges for a cancellation of ctx to abort c, and returns the
// function that stops watching (nil when ctx cannot be cancelled). A
// context with a deadline is watched too: it can be cancelled before its
// deadline (a client that went away), and the primary's call should stop
// then.
func (c *conn) watch(ctx context.Context) func() bool {
	if ctx.Done() == nil {
		return nil
	}
	return context.AfterFunc(ctx, c.abortFn)
}

// exchange writes req on c and reads its answer. On an error c is closed,
// and retry says whether req may be sent again on a fresh connection.
func (t *Transport) exchange(ctx context.Context, c *conn, req *http.Request) (_ *http.Response, retry bool, _ error) {
	reused := c.used
	c.used = true
	if d, _ := ctx.Deadline(); !d.Equal(c.deadline) {
		_ = c.nc.SetDeadline(d)
		c.deadline = d
	}
	stop := c.watch(ctx)
	c.werr = nil
	start := c.nread
	if err := req.Write(c.bw); err != nil {
		return t.failed(ctx, c, stop, err, reused && c.werr != nil && replayable(req))
	}
	if err := c.bw.Flush(); err != nil {
		return t.failed(ctx, c, stop, err, reused && replayable(req))
	}
	c.limit = c.nread + MaxHeaderBytes
	var resp *http.Response
	for n := 0; ; n++ {
		var err error
		resp, err = http.ReadResponse(c.br, req)
		if err != nil {
			c.limit = 0
			return t.failed(ctx, c, stop, err, reused && c.nread == start && replayable(req))
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		if n == max1xx {
			c.limit = 0
			return t.failed(ctx, c, stop, fmt.Errorf("%w: more than %d 1xx answers", ErrProtocol, max1xx), false)
		}
	}
	c.limit = 0
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return t.failed(ctx, c, stop, fmt.Errorf("%w: 101 Switching Protocols to a request that asked for no upgrade", ErrProtocol), false)
	}
	resp.TLS = c.tlsState
	reuse := !resp.Close && !req.Close && !hasToken(req.Header["Connection"], "close")
	if resp.Body == http.NoBody {
		t.release(ctx, c, stop, reuse)
		return resp, false, nil
	}
	resp.Body = &body{t: t, c: c, ctx: ctx, stop: stop, rc: resp.Body, reuse: reuse}
	return resp, false, nil
}

// failed ends a round trip that failed: it stops watching ctx, closes c
// and returns ctx's error if ctx ended it. A round trip that ctx ended, or
// a deadline, is never retried.
func (t *Transport) failed(ctx context.Context, c *conn, stop func() bool, err error, retry bool) (*http.Response, bool, error) {
	if stop != nil {
		stop()
	}
	c.close()
	err = ctxErr(ctx, err)
	if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
		retry = false
	}
	return nil, retry, err
}

// release ends a round trip whose answer was read: c goes back to the pool
// if reuse says so and nothing else forbids it, else it is closed.
func (t *Transport) release(ctx context.Context, c *conn, stop func() bool, reuse bool) {
	if stop != nil && !stop() {
		// The AfterFunc ran or is running: c's deadline is in the past,
		// or about to be.
		reuse = false
	}
	if reuse && t.maxIdle > 0 && ctx.Err() == nil && c.br.Buffered() == 0 {
		t.pool.put(c, time.Now(), t.maxIdle, t.timeout)
		return
	}
	c.close()
}

// replayable reports whether req's body can be sent again.
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// ctxErr returns ctx's error when ctx ended the operation that failed with
// err, which then is an i/o timeout of a deadline this package set from
// ctx; else err.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The connection's deadline, ctx's, may pass a moment before
		// ctx's own timer marks it done.
		if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			return context.DeadlineExceeded
		}
	}
	return err
}
