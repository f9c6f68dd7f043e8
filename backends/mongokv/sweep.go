package mongokv

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/kv"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// DefaultSweepInterval is RunSweeper's interval when given none: MongoDB's
// own TTL monitor's.
const DefaultSweepInterval = 60 * time.Second

// Sweep deletes the expired documents of every collection of the store (and
// expired or abandoned chunks) and returns how many it deleted. Only documents
// whose _id belongs to the collection's module are touched, so that other
// collections of the database (the bot's trades) are safe.
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	db, err := s.database(ctx)
	if err != nil {
		return 0, err
	}
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return 0, s.client.opError(ctx, "sweep", err)
	}
	expired := bson.E{Key: fieldExpires, Value: bson.D{{Key: "$lte", Value: s.clock.Now()}}}
	var total int64
	for _, name := range names {
		var filter bson.D
		switch {
		case name == DefaultCollection, name == ChunkCollection:
			filter = bson.D{expired}
		case isModuleCollection(name):
			filter = bson.D{{Key: fieldID, Value: moduleIDFilter(name)}, expired}
		default:
			continue
		}
		res, err := db.Collection(name).DeleteMany(ctx, filter)
		if err != nil {
			return total, s.client.opError(ctx, "sweep", err)
		}
		total += res.DeletedCount
	}
	return total, nil
}

// moduleIDFilter matches the string _ids of keys whose module maps to coll:
// "loldle_emoji" holds "loldle-emoji:..." and "loldle_emoji:...".
func moduleIDFilter(coll string) bson.D {
	pattern := "^" + strings.ReplaceAll(regexp.QuoteMeta(coll), "_", "[-_]") + ":"
	return bson.D{{Key: "$gte", Value: ""}, {Key: "$regex", Value: pattern}}
}

// RunSweeper sweeps every interval (DefaultSweepInterval when not positive)
// until ctx ends or the client closes; it returns why it stopped. The caller
// runs it in a goroutine it owns. A failed sweep is logged and retried at the
// next tick. It is needed where the server has no TTL indexes (see
// Client.TTLIndexUnsupported); elsewhere it only shortens the time expired
// documents take space.
func (s *Store) RunSweeper(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = DefaultSweepInterval
	}
	for {
		t := s.clock.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-s.client.done():
			t.Stop()
			return kv.ErrClosed
		case <-t.C():
		}
		n, err := s.Sweep(ctx)
		switch {
		case errors.Is(err, kv.ErrClosed):
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			s.client.logger.Warn("mongokv: sweep failed", slog.String("database", s.db), slog.String("error", err.Error()))
		case n > 0:
			s.client.logger.Debug("mongokv: swept expired documents", slog.String("database", s.db), slog.Int64("deleted", n))
		}
	}
}
