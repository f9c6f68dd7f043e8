package kvapi

import (
	"cmp"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxConnections bounds the connections a listener holds open at
// once, idle keep-alive ones included: well under the usual 1,024 open
// files, with room for the stores' own connections.
const DefaultMaxConnections = 512

// LimitListener holds at most max connections of ln open at once. Past it
// a new connection is answered 503 with Retry-After in Cloudflare's
// envelope (plain) or closed (tls: the handshake has not begun) at once,
// and log says so, once each time the cap is reached: "the listener holds
// its N connections". A nil log is slog.Default().
func LimitListener(ln net.Listener, max int, tls bool, log *slog.Logger) net.Listener {
	return &limitListener{Listener: ln, max: int64(max), tls: tls, log: cmp.Or(log, slog.Default())}
}

type limitListener struct {
	net.Listener
	max  int64
	tls  bool
	log  *slog.Logger
	open atomic.Int64
	full atomic.Bool // refusing since the cap was last reached
	shed atomic.Int64
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			if l.full.CompareAndSwap(true, false) {
				l.log.Info("kvapi: the listener takes connections again", slog.String("listener", l.Addr().String()),
					slog.Int64("refused", l.shed.Swap(0)))
			}
			return &limitedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.shed.Add(1)
		if l.full.CompareAndSwap(false, true) {
			l.log.Warn("kvapi: the listener holds its maximum of connections; new ones are refused (503) until some close",
				slog.String("listener", l.Addr().String()), slog.Int64("max_connections", l.max))
		}
		l.refuse(c)
	}
}

// refuse answers a connection past the cap without reading from it.
func (l *limitListener) refuse(c net.Conn) {
	if !l.tls {
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = c.Write(overloadResponse)
	}
	_ = c.Close()
}

var overloadResponse = rawResponse(503, CodeUnavailable, "service temporarily unavailable: the server holds its maximum of connections", "Retry-After: 1\r\n")

type limitedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}
