package mongokv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/kv"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Defaults of ClientConfig, the seed's own.
const (
	DefaultServerSelectionTimeout = 5 * time.Second
	DefaultConnectTimeout         = 10 * time.Second
)

// ClientConfig configures a Client. Only URI is required.
type ClientConfig struct {
	// URI is the MongoDB connection string. It is never logged nor quoted
	// in errors.
	URI string
	// ServerSelectionTimeout bounds how long an operation waits for a
	// usable server before it fails with kv.ErrUnavailable. Zero means the
	// URI's serverSelectionTimeoutMS, else DefaultServerSelectionTimeout.
	ServerSelectionTimeout time.Duration
	// ConnectTimeout bounds one TCP connect and handshake. Zero means the
	// URI's connectTimeoutMS, else DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// RetryAfter is the retry hint of kv.ErrUnavailable errors; zero means
	// kv.DefaultRetryAfter.
	RetryAfter time.Duration
	// Logger receives the few events worth a line: a failed connect, a
	// server without TTL indexes, a failed sweep. Nil means slog.Default().
	Logger *slog.Logger
	// Options, when set, adjusts the driver's options after the URI and
	// the timeouts are applied: a dialer, monitors, a pool size. It is
	// called once per connect attempt.
	Options func(*options.ClientOptions)
}

// Client is a lazily connected driver client shared by Stores. Make one per
// process and URI; it is safe for concurrent use. Close releases it.
type Client struct {
	cfg        ClientConfig
	redact     *redactor
	defaultDB  string
	uriDB      string // the database the URI names, or ""
	retryAfter time.Duration
	logger     *slog.Logger

	// life ends with Close; it bounds connect attempts, which run in
	// goroutines the Client owns so that one caller's cancellation never
	// fails the connect the other callers share.
	life     context.Context
	shutdown context.CancelFunc
	wg       sync.WaitGroup

	mu      sync.Mutex
	conn    *mongo.Client
	dialing *dial
	closed  bool

	ttl ttlIndexes
}

// dial is one connect attempt that any number of callers wait for.
type dial struct {
	done chan struct{}
	conn *mongo.Client
	err  error
}

// NewClient checks cfg and returns a Client; it does no I/O; the first
// operation connects.
func NewClient(cfg ClientConfig) (*Client, error) {
	red := newRedactor(cfg.URI)
	scheme, rest, ok := strings.Cut(cfg.URI, "://")
	if !ok || (scheme != "mongodb" && scheme != "mongodb+srv") {
		return nil, errors.New("mongokv: the URI must start with mongodb:// or mongodb+srv://")
	}
	uriDB, err := uriDatabase(rest)
	if err != nil {
		return nil, err
	}
	db := cmp.Or(uriDB, DefaultDatabase)
	if err := validateDatabase(db); err != nil {
		return nil, fmt.Errorf("mongokv: the URI's database: %w", err)
	}
	for name, d := range map[string]time.Duration{"ServerSelectionTimeout": cfg.ServerSelectionTimeout, "ConnectTimeout": cfg.ConnectTimeout, "RetryAfter": cfg.RetryAfter} {
		if d < 0 {
			return nil, fmt.Errorf("mongokv: %s %s is negative", name, d)
		}
	}
	retry := cfg.RetryAfter
	if retry == 0 {
		retry = kv.DefaultRetryAfter
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	life, shutdown := context.WithCancel(context.Background())
	return &Client{cfg: cfg, redact: red, defaultDB: db, uriDB: uriDB, retryAfter: retry, logger: logger, life: life, shutdown: shutdown}, nil
}

// URIDatabase is the database the URI names in its path, or "" when it
// names none. A tool that shares MongoDB with the JavaScript bot, whose
// store always opens DefaultDatabase, warns when the two differ.
func (c *Client) URIDatabase() string { return c.uriDB }

// uriDatabase returns the database named in the path of a URI without its
// scheme ("user:pass@host/db?opts"), or "".
func uriDatabase(rest string) (string, error) {
	// The authority ends at the first "/": a "/" in a password must be
	// escaped.
	_, path, ok := strings.Cut(rest, "/")
	if !ok {
		return "", nil
	}
	path, _, _ = strings.Cut(path, "?")
	db, err := url.PathUnescape(path)
	if err != nil {
		return "", errors.New("mongokv: the URI's database name is badly escaped")
	}
	return db, nil
}

// Connect connects now instead of on first use, sharing the attempt with any
// concurrent caller. It is what a process calls at start to fail fast.
func (c *Client) Connect(ctx context.Context) error {
	_, err := c.driver(ctx)
	return err
}

// driver returns the connected driver client, connecting if needed.
func (c *Client) driver(ctx context.Context) (*mongo.Client, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, kv.ErrClosed
	}
	if conn := c.conn; conn != nil {
		c.mu.Unlock()
		return conn, nil
	}
	d := c.dialing
	if d == nil {
		d = &dial{done: make(chan struct{})}
		c.dialing = d
		c.wg.Add(1)
		go c.connect(d)
	}
	c.mu.Unlock()
	select {
	case <-d.done:
		return d.conn, d.err
	case <-ctx.Done():
		return nil, fmt.Errorf("mongokv: waiting for the connection: %w", ctx.Err())
	}
}

// connect makes one attempt and publishes its outcome. A failed attempt
// leaves no client behind, so the next caller starts afresh.
func (c *Client) connect(d *dial) {
	defer c.wg.Done()
	conn, err := c.open()
	c.mu.Lock()
	c.dialing = nil
	if err == nil && c.closed {
		err = kv.ErrClosed
	} else if err == nil {
		c.conn = conn
	}
	c.mu.Unlock()
	if err != nil && conn != nil {
		c.disconnect(conn)
		conn = nil
	}
	d.conn, d.err = conn, err
	close(d.done)
	switch {
	case errors.Is(err, kv.ErrUnavailable):
		c.logger.Warn("mongokv: MongoDB unreachable; operations fail with kv.ErrUnavailable until a connect succeeds",
			slog.Duration("retry_after", c.retryAfter), slog.String("error", err.Error()))
	case err != nil && !errors.Is(err, kv.ErrClosed):
		c.logger.Error("mongokv: cannot connect to MongoDB", slog.String("error", err.Error()))
	}
}

// open builds a driver client and waits until a server answers a ping.
func (c *Client) open() (*mongo.Client, error) {
	opts := options.Client().ApplyURI(c.cfg.URI)
	if c.cfg.ServerSelectionTimeout > 0 || opts.ServerSelectionTimeout == nil {
		opts.SetServerSelectionTimeout(orDefault(c.cfg.ServerSelectionTimeout, DefaultServerSelectionTimeout))
	}
	if c.cfg.ConnectTimeout > 0 || opts.ConnectTimeout == nil {
		opts.SetConnectTimeout(orDefault(c.cfg.ConnectTimeout, DefaultConnectTimeout))
	}
	if c.cfg.Options != nil {
		c.cfg.Options(opts)
	}
	conn, err := mongo.Connect(opts)
	if err != nil {
		if unreachable(err) { // an SRV lookup that failed
			return nil, kv.Unavailable(backendName, c.retryAfter, c.wrap("connect", err))
		}
		return nil, c.wrap("invalid client options", err)
	}
	ctx, cancel := context.WithTimeout(c.life, *opts.ServerSelectionTimeout+*opts.ConnectTimeout)
	defer cancel()
	if err := conn.Ping(ctx, nil); err != nil {
		if c.life.Err() != nil {
			return conn, kv.ErrClosed
		}
		if unreachable(err) {
			return conn, kv.Unavailable(backendName, c.retryAfter, c.wrap("connect", err))
		}
		return conn, c.wrap("connect", err)
	}
	return conn, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (c *Client) disconnect(conn *mongo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = conn.Disconnect(ctx) // nothing to do about a failed goodbye
}

// Close disconnects the client; Stores using it then fail with kv.ErrClosed.
// It waits for a connect in progress to give up. Close is idempotent.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	conn := c.conn
	c.conn = nil
	c.mu.Unlock()
	c.shutdown()
	c.wg.Wait()
	if conn == nil {
		return nil
	}
	if err := conn.Disconnect(ctx); err != nil {
		return c.wrap("disconnect", err)
	}
	return nil
}

// done is closed when the client is closed.
func (c *Client) done() <-chan struct{} { return c.life.Done() }
