package kvapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// The defaults of the zero ServeConfig: the hardening every front gets, the
// emulator's and the proxy's alike.
const (
	// DefaultReadHeaderTimeout bounds the wait for a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds reading a whole request, time for a bulk
	// write of MaxBulkBytes at about 1 MB/s.
	DefaultReadTimeout = 2 * time.Minute
	// DefaultWriteTimeout bounds answering one request, from the end of its
	// headers: its handler's context ends MaxAnswerMargin before (1 min
	// 55 s).
	DefaultWriteTimeout = 2 * time.Minute
	// DefaultIdleTimeout closes a keep-alive connection idle that long.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxHeaderBytes bounds a request's headers, its URL included:
	// a 512-byte key escaped is at most 1.5 KiB.
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultMaxConcurrent bounds the requests served at once; memory is
	// bounded by the Server's memory budget, not by this.
	DefaultMaxConcurrent = 64
)

// OverloadRetryAfter is the Retry-After of a request refused because
// MaxConcurrent requests are being served.
const OverloadRetryAfter = time.Second

// TimeoutRetryAfter is the Retry-After of a request whose store did not
// answer before the request's deadline.
const TimeoutRetryAfter = time.Second

// MaxAnswerMargin caps the margin (a tenth of WriteTimeout) by which a
// request's context ends before the write deadline (see answerWithin).
const MaxAnswerMargin = 5 * time.Second

// ErrUnauthenticated reports a front that would serve without a client
// token although it was not told to, or was told to off loopback.
var ErrUnauthenticated = errors.New("kvapi: refusing to serve without a client token")

// ServeConfig configures an HTTPServer. The zero value means the defaults
// above, and a client token required.
type ServeConfig struct {
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	// WriteTimeout is the connection's write deadline, from the end of a
	// request's headers; the handler's context ends a margin before it
	// (MaxAnswerMargin, and the package documentation).
	WriteTimeout   time.Duration
	IdleTimeout    time.Duration
	MaxHeaderBytes int
	MaxConcurrent  int
	// MaxPerClient bounds the requests one client (ClientKey) is served at
	// once: 0 means three quarters of MaxConcurrent, so that a client that
	// keeps every request it can open leaves a quarter to the others.
	MaxPerClient int
	// ClientKey names the client of a request; nil is RemoteHost.
	ClientKey func(*http.Request) string
	// MinBodyRate is the least rate, in bytes a second, a body may average
	// once BodyGrace has passed, or the request ends with 408: 0 means
	// DefaultMinBodyRate, a negative value no minimum.
	MinBodyRate int
	BodyGrace   time.Duration
	// MaxConnections bounds the connections the listener holds open at
	// once (LimitListener): 0 means DefaultMaxConnections.
	MaxConnections int
	// Logger says when the connection cap is reached; nil is slog.Default().
	Logger *slog.Logger
	// Unauthenticated says, in so many words, that the front serves a
	// Server without a token: only on loopback (or Unix socket) listeners,
	// and only to requests CheckLocal passes.
	Unauthenticated bool
	// TLSConfig, when set, makes Serve speak TLS (HTTP/1.1) with it.
	TLSConfig *tls.Config
	// Wrap, when set, wraps the handler inside the concurrency bound, for
	// instrumentation or the routes a service adds beside the API.
	Wrap func(http.Handler) http.Handler
}

// HTTPServer is a hardened *http.Server around a Server, as the package
// documentation lists.
type HTTPServer struct {
	srv             *http.Server
	tls             *tls.Config
	unauthenticated bool
	maxConns        int
	log             *slog.Logger
}

// NewHTTPServer returns an HTTPServer for api. It refuses a Server without
// a token unless cfg.Unauthenticated, and cfg.Unauthenticated with a
// Server that has one (ErrUnauthenticated, ErrConfig).
func NewHTTPServer(api *Server, cfg ServeConfig) (*HTTPServer, error) {
	switch {
	case api == nil:
		return nil, fmt.Errorf("%w: nil Server", ErrConfig)
	case !api.RequiresToken() && !cfg.Unauthenticated:
		return nil, fmt.Errorf("%w: set a token, or say that it runs unauthenticated on loopback", ErrUnauthenticated)
	case api.RequiresToken() && cfg.Unauthenticated:
		return nil, fmt.Errorf("%w: Unauthenticated is set but the Server requires a token", ErrConfig)
	}
	var h http.Handler = api
	if cfg.Wrap != nil {
		h = cfg.Wrap(h)
	}
	write := or(cfg.WriteTimeout, DefaultWriteTimeout)
	h = withDeadline(h, write)
	maxConc := or(cfg.MaxConcurrent, DefaultMaxConcurrent)
	adm := &admission{max: maxConc, perClient: or(cfg.MaxPerClient, max(1, maxConc*3/4)), key: cfg.ClientKey,
		rate: or(cfg.MinBodyRate, DefaultMinBodyRate), grace: or(cfg.BodyGrace, DefaultBodyGrace),
		read: or(cfg.ReadTimeout, DefaultReadTimeout), held: map[string]int{}}
	if cfg.MinBodyRate < 0 {
		adm.rate = 0
	}
	if adm.key == nil {
		adm.key = RemoteHost
	}
	h = adm.serve(h)
	if cfg.Unauthenticated {
		h = localOnly(h)
	}
	// With a minimum body rate the body guard bounds every body (never past
	// ReadTimeout) and ReadHeaderTimeout the headers: net/http's own
	// ReadTimeout would set one more deadline a request, for nothing.
	read := adm.read
	if adm.rate > 0 {
		read = 0
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: or(cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		ReadTimeout:       read,
		WriteTimeout:      write,
		IdleTimeout:       or(cfg.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    or(cfg.MaxHeaderBytes, DefaultMaxHeaderBytes),
		ConnContext:       connContext,
		ConnState:         connState,
	}
	hs := &HTTPServer{srv: srv, tls: cfg.TLSConfig, unauthenticated: cfg.Unauthenticated,
		maxConns: or(cfg.MaxConnections, DefaultMaxConnections), log: cfg.Logger}
	return hs, nil
}

func or[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Serve accepts connections on ln until Shutdown or Close; it returns
// http.ErrServerClosed then. An unauthenticated front refuses a listener
// that is not on loopback.
func (h *HTTPServer) Serve(ln net.Listener) error {
	if h.unauthenticated && !localAddr(ln.Addr()) {
		return fmt.Errorf("%w: an unauthenticated front listens on loopback only, not %s", ErrUnauthenticated, ln.Addr())
	}
	ln = LimitListener(ln, h.maxConns, h.tls != nil, h.log)
	if h.tls != nil {
		ln = tls.NewListener(ln, h.tls)
	}
	return h.srv.Serve(envelopeListener{ln})
}

// localAddr reports whether addr is reachable only from this machine.
func localAddr(addr net.Addr) bool {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	return false
}

// Shutdown stops accepting and waits for the requests under way until ctx
// ends, as http.Server.Shutdown does.
func (h *HTTPServer) Shutdown(ctx context.Context) error { return h.srv.Shutdown(ctx) }

// Close closes the listeners and connections at once.
func (h *HTTPServer) Close() error { return h.srv.Close() }

// HTTP returns the underlying *http.Server, to register shutdown hooks or
// read its settings; serve through Serve, never through it directly, or
// net/http's own refusals come as plain text.
func (h *HTTPServer) HTTP() *http.Server { return h.srv }

// ServeLoopback serves h on a loopback port, for a demo's emulator, until
// stop, which waits for the serving goroutine.
func ServeLoopback(h http.Handler) (url string, stop func(context.Context) error, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return "http://" + ln.Addr().String(), func(ctx context.Context) error {
		defer func() { <-done }()
		return srv.Shutdown(ctx)
	}, nil
}
