package h1

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
)

// body is an answer's body on a connection that the round trip still
// holds: reading it to EOF releases the connection to the pool, an error
// or a Close before EOF closes it (see drain).
type body struct {
	t     *Transport
	c     *conn
	ctx   context.Context
	stop  func() bool
	rc    io.ReadCloser // net/http's reader of the framing (length, chunks)
	reuse bool          // neither side asked to close

	// mu is held by Read; Close takes it only if no Read is under way, and
	// otherwise closes the connection under that Read.
	mu     sync.Mutex
	err    error // what Read returns from now on: io.EOF or the failure
	closed atomic.Bool
	done   atomic.Bool // the connection was released
}

func (b *body) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, ErrBodyClosed
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.err = err
		b.release(b.reuse)
	case err != nil:
		err = ctxErr(b.ctx, err)
		b.err = err
		b.release(false)
	}
	return n, err
}

// Close releases the connection. Before EOF it drains what has already
// arrived, up to DrainLimit bytes; a Read under way on another goroutine
// is interrupted instead, and the connection closed.
func (b *body) Close() error {
	b.closed.Store(true)
	if !b.mu.TryLock() {
		b.release(false)
		return nil
	}
	defer b.mu.Unlock()
	if !b.done.Load() {
		b.release(b.drain())
	}
	return nil
}

// drain reads the rest of the body if it has already arrived and is at
// most DrainLimit bytes, and says whether it reached EOF. It never waits
// on the network: a past read deadline makes any read that would fail.
func (b *body) drain() bool {
	if !b.reuse {
		return false
	}
	_ = b.c.nc.SetReadDeadline(aLongTimeAgo)
	b.c.deadline = aLongTimeAgo // the next round trip sets its own
	_, err := io.CopyN(io.Discard, b.rc, DrainLimit+1)
	return err == io.EOF
}

// release hands the connection back once, pooled if reuse.
func (b *body) release(reuse bool) {
	if b.done.CompareAndSwap(false, true) {
		b.t.release(b.ctx, b.c, b.stop, reuse)
	}
}
