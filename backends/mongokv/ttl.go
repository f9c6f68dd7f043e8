package mongokv

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// ttlIndexes remembers, per database and collection, that the TTL index has
// been made (or cannot be), so that it is asked for once per process.
type ttlIndexes struct {
	byColl      sync.Map // "db\x00coll" -> *ttlIndex
	unsupported atomic.Bool
	warnOnce    sync.Once
}

type ttlIndex struct {
	done atomic.Bool
	mu   sync.Mutex // serializes the attempts; held across the createIndexes call only
}

// ttlModel is the bot's own index: same keys and options, so creating it
// where the bot already did is a no-op rather than a conflict. It is made
// afresh for each call: the driver writes into the options it is given.
func ttlModel() mongo.IndexModel {
	return mongo.IndexModel{
		Keys:    bson.D{{Key: fieldExpires, Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(0).SetSparse(true),
	}
}

// TTLIndexUnsupported reports whether the server refused to build a TTL
// index (FerretDB does). Expired documents then stay until a sweep.
func (c *Client) TTLIndexUnsupported() bool { return c.ttl.unsupported.Load() }

// ensureTTL makes coll's TTL index once. An unreachable server fails the
// caller's write, which would fail anyway; a server that cannot make TTL
// indexes, or that already has a different index on expiresAt, is
// remembered and not asked again.
func (c *Client) ensureTTL(ctx context.Context, db *mongo.Database, coll string) error {
	v, _ := c.ttl.byColl.LoadOrStore(db.Name()+"\x00"+coll, new(ttlIndex))
	idx := v.(*ttlIndex)
	if idx.done.Load() {
		return nil
	}
	idx.mu.Lock()
	if idx.done.Load() {
		idx.mu.Unlock()
		return nil
	}
	_, err := db.Collection(coll).Indexes().CreateOne(ctx, ttlModel())
	outcome := classifyIndexError(err)
	if outcome != indexRetry {
		idx.done.Store(true)
	}
	idx.mu.Unlock()

	switch outcome {
	case indexUnsupported:
		c.ttl.unsupported.Store(true)
		c.ttl.warnOnce.Do(func() {
			c.logger.Warn("mongokv: the server cannot build TTL indexes; reads still hide expired keys, and a sweeper must delete them",
				slog.String("error", c.redact.redact(err.Error())))
		})
	case indexFailed:
		c.logger.Warn("mongokv: could not create the TTL index; reads still hide expired keys",
			slog.String("collection", coll), slog.String("error", c.redact.redact(err.Error())))
	case indexRetry:
		return c.opError(ctx, "create TTL index", err)
	}
	return nil
}

type indexOutcome int

const (
	indexMade        indexOutcome = iota
	indexUnsupported              // the server has no TTL indexes (FerretDB: code 238)
	indexFailed                   // any other refusal: logged, not retried
	indexRetry                    // unreachable or cancelled: try again on the next write
)

// Codes of createIndexes refusals.
const (
	codeNotImplemented         = 238
	codeCannotCreateIndex      = 67
	codeIndexOptionsConflict   = 85
	codeIndexKeySpecsConflict  = 86
	codeIndexAlreadyExists     = 68
	codeInvalidIndexSpecOption = 197
)

func classifyIndexError(err error) indexOutcome {
	if err == nil {
		return indexMade
	}
	var se mongo.ServerError
	if !errors.As(err, &se) || unreachable(err) {
		return indexRetry
	}
	msg := strings.ToLower(err.Error())
	switch {
	case se.HasErrorCode(codeIndexOptionsConflict), se.HasErrorCode(codeIndexKeySpecsConflict), se.HasErrorCode(codeIndexAlreadyExists):
		return indexMade // an index on expiresAt exists already, made by the bot
	case se.HasErrorCode(codeNotImplemented),
		strings.Contains(msg, "ttl index"), strings.Contains(msg, "expireafterseconds"),
		se.HasErrorCode(codeCannotCreateIndex) && strings.Contains(msg, "ttl"),
		se.HasErrorCode(codeInvalidIndexSpecOption):
		return indexUnsupported
	}
	return indexFailed
}
