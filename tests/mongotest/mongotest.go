package mongotest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"sync"

	"github.com/FerretDB/FerretDB/ferretdb"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// EnvURI names the environment variable of an external MongoDB.
const EnvURI = "MONGODB_URI"

// Config configures Start. The zero value is an embedded FerretDB with its
// data in a temporary directory and its logs discarded.
type Config struct {
	// Dir holds FerretDB's SQLite files; empty means a temporary
	// directory that Close removes.
	Dir string
	// Logger receives FerretDB's own logs; nil discards them (FerretDB
	// logs every connection at info level, which drowns test output).
	Logger *slog.Logger
	// IgnoreEnv starts FerretDB even when MONGODB_URI is set.
	IgnoreEnv bool
	// Listen is the TCP address the server listens on; empty means a
	// random loopback port. To restart a server under the same URI, Close
	// it and Start again with its Addr and the same Dir.
	Listen string
}

// Server is a running MongoDB-compatible server: an embedded FerretDB, or the
// external server named by MONGODB_URI.
type Server struct {
	uri      string
	addr     string
	external bool

	cancel  context.CancelFunc
	done    chan struct{}
	dir     string
	tempDir string

	adminOnce sync.Once
	admin     *mongo.Client
	adminErr  error
	closeOnce sync.Once
}

// newServer serialises ferretdb.New.
var newServer sync.Mutex

// Start returns the server named by MONGODB_URI when that variable is set, or
// starts an embedded FerretDB. The server runs until Close; ctx bounds only
// the start.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if uri := os.Getenv(EnvURI); uri != "" && !cfg.IgnoreEnv {
		return &Server{uri: uri, external: true}, nil
	}
	s := &Server{done: make(chan struct{}), dir: cfg.Dir}
	if s.dir == "" {
		tmp, err := os.MkdirTemp("", "mongotest-")
		if err != nil {
			return nil, fmt.Errorf("mongotest: data directory: %w", err)
		}
		s.dir, s.tempDir = tmp, tmp
	} else if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("mongotest: data directory: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	newServer.Lock() // ferretdb.New sets a package-level version field: two at once race
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: cmp.Or(cfg.Listen, "127.0.0.1:0")},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: "file:" + s.dir + "/?_pragma=synchronous(normal)",
	})
	newServer.Unlock()
	if err != nil {
		s.removeTemp()
		return nil, fmt.Errorf("mongotest: start FerretDB: %w", err)
	}
	// The listener is bound by New, so the URI is known before Run.
	s.uri = f.MongoDBURI()
	if u, err := url.Parse(s.uri); err == nil {
		s.addr = u.Host
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		defer close(s.done)
		_ = f.Run(runCtx) // always nil: Run returns when runCtx ends
	}()
	return s, nil
}

// Addr is the embedded server's listening address; empty for an external one.
func (s *Server) Addr() string { return s.addr }

// URI is the server's connection string. An external server's URI may carry
// credentials: never log it.
func (s *Server) URI() string { return s.uri }

// Dir is the embedded server's data directory; empty for an external one.
func (s *Server) Dir() string { return s.dir }

// External reports whether the server is the one named by MONGODB_URI.
func (s *Server) External() bool { return s.external }

// Close stops an embedded server, waits for it to release its files and
// removes its temporary directory; idempotent.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		if s.admin != nil {
			err = s.admin.Disconnect(context.Background())
		}
		if s.external {
			return
		}
		s.cancel()
		<-s.done
		err = errors.Join(err, s.removeTemp())
	})
	return err
}

func (s *Server) removeTemp() error {
	if s.tempDir == "" {
		return nil
	}
	return os.RemoveAll(s.tempDir)
}

// Client returns a driver client for the server that Close disconnects.
func (s *Server) Client() (*mongo.Client, error) {
	s.adminOnce.Do(func() {
		s.admin, s.adminErr = mongo.Connect(options.Client().ApplyURI(s.uri))
	})
	return s.admin, s.adminErr
}

// NewDatabaseName returns a database name that no other caller gets: at most
// 38 bytes of [a-z0-9_], within every server's limits.
func NewDatabaseName(label string) string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	clean := make([]byte, 0, 24)
	for i := 0; i < len(label) && len(clean) < cap(clean); i++ {
		switch c := label[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			clean = append(clean, c)
		case c >= 'A' && c <= 'Z':
			clean = append(clean, c+'a'-'A')
		default:
			if len(clean) > 0 && clean[len(clean)-1] != '_' {
				clean = append(clean, '_')
			}
		}
	}
	return "t_" + string(clean) + "_" + hex.EncodeToString(b[:])
}
