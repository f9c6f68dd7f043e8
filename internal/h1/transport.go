package h1

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The defaults of the zero Config.
const (
	DefaultMaxIdlePerHost = 64
	DefaultIdleTimeout    = 90 * time.Second
	DefaultDialTimeout    = 30 * time.Second
)

// MaxHeaderBytes bounds an answer's status line and headers, 1xx answers
// included, as net/http's Transport does by default.
const MaxHeaderBytes = 1 << 20

// DrainLimit is how much of an answer's body that has already arrived a
// Close before EOF reads and discards to keep the connection.
const DrainLimit = 4 << 10

// max1xx bounds the informational answers skipped before the final one.
const max1xx = 5

// The errors of this package.
var (
	// ErrRequest reports a request this transport cannot send: no URL or
	// no host in it.
	ErrRequest = errors.New("h1: invalid request")
	// ErrProtocol reports a server that broke HTTP/1.1 as this transport
	// speaks it: another protocol negotiated by ALPN, an unsolicited 101,
	// too many 1xx answers, or headers over MaxHeaderBytes.
	ErrProtocol = errors.New("h1: protocol error")
	// ErrBodyClosed is what reading an answer's body after Close returns.
	ErrBodyClosed = errors.New("h1: read on closed response body")
)

// Config configures a Transport. Zero values mean the documented defaults.
type Config struct {
	// MaxIdlePerHost is how many idle connections are kept per host;
	// 0 means DefaultMaxIdlePerHost, a negative number none (every
	// connection is closed after its round trip).
	MaxIdlePerHost int
	// IdleTimeout is how long a connection may sit idle and still be
	// reused; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// DialTimeout bounds connecting and the TLS handshake, within the
	// request's context; 0 means DefaultDialTimeout.
	DialTimeout time.Duration
	// TLS configures https connections; it is cloned, and the clone gets
	// the URL's host as ServerName unless it names one, NextProtos
	// "http/1.1" only, and a ClientSessionCache unless it has one, so that
	// reconnecting resumes the session. Nil means crypto/tls's defaults.
	TLS *tls.Config
	// Proxy says which requests go through a proxy, as
	// http.Transport.Proxy does; those go to Fallback. Nil means
	// http.ProxyFromEnvironment.
	Proxy func(*http.Request) (*url.URL, error)
	// Fallback sends what this transport does not handle (see the package
	// documentation). Nil means a clone of http.DefaultTransport, with
	// Proxy and TLS set from this Config when they are.
	Fallback http.RoundTripper
}

// Transport is an HTTP/1.1 http.RoundTripper that runs every round trip
// on the caller's goroutine. It is safe for concurrent use.
type Transport struct {
	maxIdle  int
	timeout  time.Duration
	dialer   net.Dialer
	tls      *tls.Config
	proxy    func(*http.Request) (*url.URL, error)
	fallback http.RoundTripper
	pool     pool
}

var _ http.RoundTripper = (*Transport)(nil)

// New returns a Transport configured by cfg.
func New(cfg Config) *Transport {
	t := &Transport{
		maxIdle: cfg.MaxIdlePerHost,
		timeout: cfg.IdleTimeout,
		proxy:   cfg.Proxy,
	}
	switch {
	case t.maxIdle == 0:
		t.maxIdle = DefaultMaxIdlePerHost
	case t.maxIdle < 0:
		t.maxIdle = 0
	}
	if t.timeout <= 0 {
		t.timeout = DefaultIdleTimeout
	}
	t.dialer.Timeout = cfg.DialTimeout
	if t.dialer.Timeout <= 0 {
		t.dialer.Timeout = DefaultDialTimeout
	}
	if t.proxy == nil {
		t.proxy = http.ProxyFromEnvironment
	}
	if cfg.TLS != nil {
		t.tls = cfg.TLS.Clone()
	} else {
		t.tls = &tls.Config{}
	}
	t.tls.NextProtos = []string{"http/1.1"}
	if t.tls.ClientSessionCache == nil {
		t.tls.ClientSessionCache = tls.NewLRUClientSessionCache(0)
	}
	t.fallback = cfg.Fallback
	if t.fallback == nil {
		fb := http.DefaultTransport.(*http.Transport).Clone()
		if cfg.Proxy != nil {
			fb.Proxy = cfg.Proxy
		}
		if cfg.TLS != nil {
			fb.TLSClientConfig = cfg.TLS.Clone()
		}
		t.fallback = fb
	}
	t.pool.idle = make(map[poolKey][]*conn)
	return t
}

// RoundTrip sends req and returns its answer, whose body the caller must
// read to EOF or close. It closes req.Body, on errors too.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		closeBody(req)
		return nil, fmt.Errorf("%w: no URL", ErrRequest)
	}
	if !t.handles(req) {
		return t.fallback.RoundTrip(req)
	}
	if req.URL.Host == "" {
		closeBody(req)
		return nil, fmt.Errorf("%w: no host in URL", ErrRequest)
	}
	ctx := req.Context()
	key := poolKey{tls: req.URL.Scheme == "https", host: req.URL.Host}
	c, err := t.take(ctx, key, req.URL)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, retry, err := t.exchange(ctx, c, req)
	if !retry {
		return resp, err
	}
	send := req
	if req.GetBody != nil && req.Body != nil && req.Body != http.NoBody {
		body, gerr := req.GetBody()
		if gerr != nil {
			return nil, err
		}
		r := *req
		r.Body = body
		send = &r
	}
	if c, err = t.dial(ctx, key, req.URL); err != nil {
		closeBody(send)
		return nil, err
	}
	resp, _, err = t.exchange(ctx, c, send)
	if resp != nil {
		resp.Request = req
	}
	return resp, err
}

// handles reports whether req is one this transport sends itself.
func (t *Transport) handles(req *http.Request) bool {
	if s := req.URL.Scheme; s != "http" && s != "https" {
		return false
	}
	if len(req.Header) > 0 {
		if req.Header.Get("Upgrade") != "" || hasToken(req.Header["Connection"], "upgrade") {
			return false
		}
		if hasToken(req.Header["Expect"], "100-continue") {
			return false
		}
	}
	p, err := t.proxy(req)
	return err == nil && p == nil
}

// CloseIdleConnections closes the idle connections, this transport's and
// the fallback's; connections in use are pooled again when their round
// trips end.
func (t *Transport) CloseIdleConnections() {
	t.pool.closeAll()
	if f, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		f.CloseIdleConnections()
	}
}

// take returns an idle connection for key, or a new one.
func (t *Transport) take(ctx context.Context, key poolKey, u *url.URL) (*conn, error) {
	if c := t.pool.take(key, time.Now(), t.timeout); c != nil {
		return c, nil
	}
	return t.dial(ctx, key, u)
}

// dial connects to u's host and, for https, completes the TLS handshake,
// both bounded by the dial timeout and ctx.
func (t *Transport) dial(ctx context.Context, key poolKey, u *url.URL) (*conn, error) {
	addr := u.Host
	if u.Port() == "" {
		port := "80"
		if key.tls {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	nc, err := t.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	c := &conn{nc: nc, key: key}
	c.abortFn = c.abort
	if key.tls {
		if err := t.handshake(ctx, c, u.Hostname()); err != nil {
			_ = nc.Close()
			return nil, err
		}
	}
	c.br = newReader(c)
	c.bw = newWriter(c)
	return c, nil
}

// handshake runs the TLS handshake on c on this goroutine: tls.Conn's
// HandshakeContext would start one to watch ctx, so the deadline and the
// watch are this package's own, as for a round trip.
func (t *Transport) handshake(ctx context.Context, c *conn, host string) error {
	cfg := t.tls
	if cfg.ServerName == "" {
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	tc := tls.Client(c.nc, cfg)
	deadline := time.Now().Add(t.dialer.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.nc.SetDeadline(deadline)
	stop := c.watch(ctx)
	err := tc.Handshake()
	if stop != nil && !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return ctxErr(ctx, err)
	}
	state := tc.ConnectionState()
	if p := state.NegotiatedProtocol; p != "" && p != "http/1.1" {
		return fmt.Errorf("%w: server negotiated %q", ErrProtocol, p)
	}
	c.nc = tc
	c.tlsState = &state
	c.deadline = deadline
	return nil
}

// closeBody closes the request's body, as a RoundTripper must on every
// path.
func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// hasToken reports whether the comma-separated header values hold token,
// case-insensitively.
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
}
