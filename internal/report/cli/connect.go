package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"

	"github.com/kvshadow/kvshadow/assembly"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/kv"
)

// stores are the two sides of a run and what must be closed after it.
type stores struct {
	primary, shadow kv.Store
	names           [2]string
	identity        string
	close           func() // releases what the stores hold
	// spent is what the preflight asked of the primary.
	spent report.Requests
	// backends has the control collections and the pairing; nil in the demo.
	backends *assembly.Backends
}

// connect opens the Workers KV namespace and the MongoDB database, or the
// demo's in-process pair.
func connect(ctx context.Context, o *options, stderr io.Writer) (*stores, error) {
	if o.demo {
		return startDemo(ctx, o, stderr)
	}
	b, err := assembly.OpenBackends(assembly.Settings{
		Account: o.cfAccount, Namespaces: []assembly.Namespace{{ID: o.cfNamespace, Database: o.mongoDB}}, CFToken: o.cfToken,
		PrimaryURL: o.cfBaseURL, MaxBulkWrite: o.cfMaxBulkWrite, MongoURI: o.mongoURI, ControlDB: o.controlDB,
		// The report retries within its own budget, after the delay the
		// API asks for; retries inside the client would spend requests the
		// budget cannot see.
		MaxRetries: -1,
		// The preflight says what went wrong once; the client's own log
		// lines would say it again, with the driver's topology dump.
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return nil, err
	}
	side := b.Sides[0]
	s := &stores{primary: side.Primary, shadow: side.Shadow, names: [2]string{"cloudflare_kv", "mongodb"}, backends: b,
		close: func() { _ = b.Close(context.Background()) }}
	// Said before connecting, so that a failed start says it too: a URI
	// that names no database means the bot's, not whatever one expected.
	fmt.Fprintf(stderr, "shadow-report: MongoDB database %s\n", o.mongoDB)
	if named := b.URIDatabase; named != "" && named != o.mongoDB {
		fmt.Fprintf(stderr, "shadow-report: warning: MONGODB_URI names the database %q, but the report reads %q, the bot's (its MongoKVStore opens %s whatever its URI says); if the bot really uses %q, set MONGODB_DB=%s (or --mongo-db)\n",
			named, o.mongoDB, mongokv.DefaultDatabase, named, named)
	}
	if s.spent, err = preflight(ctx, o, side.Primary, side.Shadow.(*mongokv.Store).Connect); err != nil {
		s.close()
		return nil, err
	}
	// The identity binds a checkpoint to these stores. The URI may hold
	// credentials, so only a hash of it goes in (and the engine hashes the
	// whole again).
	uri := sha256.Sum256([]byte(o.mongoURI))
	s.identity = fmt.Sprintf("cloudflare_kv:%s/%s@%s|mongodb:%s/%s",
		o.cfAccount, o.cfNamespace, o.cfBaseURL, hex.EncodeToString(uri[:8]), o.mongoDB)
	return s, nil
}
