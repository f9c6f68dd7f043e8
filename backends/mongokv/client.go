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
	// URI is the MongoDB connection string, never logged nor quoted in errors.
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
	// Logger receives the few events worth a line: a MongoDB that cannot
	// be reached (see Connect), a server without TTL indexes, a failed
	// sweep. Nil means slog.Default().
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
	outage  outage // the connects failing since the last that worked

	ttl ttlIndexes
}

// dial is one connect attempt that any number of callers wait for.
type dial struct {
	done chan struct{}
	conn *mongo.Client
	err  error
	// told: a caller of Connect waits for the attempt (see Connect).
	told bool
}

// connectReminder is how often a MongoDB that stays unreachable is said
// again, however many connects fail meanwhile.
const connectReminder = 5 * time.Minute

// outage is what the log has said of the connects failing since the last
// that worked: the first failure is said once, by the Client or by the
// caller of Connect, and then once every connectReminder.
type outage struct {
	since, said time.Time
	failed      int
}

// note records a failed connect (told: its caller says it) and returns
// what to log, if anything: the first failure, or a reminder.
func (o *outage) note(now time.Time, told bool) (msg string) {
	o.failed++
	switch {
	case o.since.IsZero():
		o.since, o.said = now, now
		if !told {
			msg = "mongokv: MongoDB unreachable; operations fail with kv.ErrUnavailable until a connect succeeds"
		}
	case now.Sub(o.said) >= connectReminder:
		o.said = now
		msg = fmt.Sprintf("mongokv: MongoDB still unreachable (since %s, %d connects failed); operations fail with kv.ErrUnavailable until a connect succeeds",
			o.since.UTC().Format(time.RFC3339), o.failed)
	}
	return msg
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
	if err := CheckDatabase(db); err != nil {
		return nil, fmt.Errorf("mongokv: the URI's database: %w", err)
	}
	for name, d := range map[string]time.Duration{"ServerSelectionTimeout": cfg.ServerSelectionTimeout, "ConnectTimeout": cfg.ConnectTimeout, "RetryAfter": cfg.RetryAfter} {
		if d < 0 {
			return nil, fmt.Errorf("mongokv: %s %s is negative", name, d)
		}
	}
	retry := cmp.Or(cfg.RetryAfter, kv.DefaultRetryAfter)
	logger := cmp.Or(cfg.Logger, slog.Default())
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
//
// A failed Connect is its caller's to say: the Client does not log it, and
// says the same outage again only as its periodic reminder.
func (c *Client) Connect(ctx context.Context) error {
	_, err := c.dial(ctx, true)
	return err
}

func (c *Client) driver(ctx context.Context) (*mongo.Client, error) { return c.dial(ctx, false) }

// dial returns the connected driver client, connecting if needed; told:
// the caller says a failure itself.
func (c *Client) dial(ctx context.Context, told bool) (*mongo.Client, error) {
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
	d.told = d.told || told
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
		c.conn, c.outage = conn, outage{}
	}
	told, say := d.told, ""
	if errors.Is(err, kv.ErrUnavailable) {
		say = c.outage.note(time.Now(), told)
	}
	c.mu.Unlock()
	if err != nil && conn != nil {
		c.disconnect(conn)
		conn = nil
	}
	d.conn, d.err = conn, err
	close(d.done)
	switch {
	case say != "":
		c.logger.Warn(say, slog.Duration("retry_after", c.retryAfter), slog.String("error", err.Error()))
	case err == nil || told || errors.Is(err, kv.ErrUnavailable):
	case !errors.Is(err, kv.ErrClosed):
		c.logger.Error("mongokv: cannot connect to MongoDB", slog.String("error", err.Error()))
	}
}

// open builds a driver client and waits until a server answers a ping.
func (c *Client) open() (*mongo.Client, error) {
	opts := options.Client().ApplyURI(c.cfg.URI)
	if c.cfg.ServerSelectionTimeout > 0 || opts.ServerSelectionTimeout == nil {
		opts.SetServerSelectionTimeout(cmp.Or(c.cfg.ServerSelectionTimeout, DefaultServerSelectionTimeout))
	}
	if c.cfg.ConnectTimeout > 0 || opts.ConnectTimeout == nil {
		opts.SetConnectTimeout(cmp.Or(c.cfg.ConnectTimeout, DefaultConnectTimeout))
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

func (c *Client) done() <-chan struct{} { return c.life.Done() }
