package mongokv

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/kv"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// DefaultSweepInterval is RunSweeper's interval when given none: MongoDB's
// own TTL monitor's.
const DefaultSweepInterval = 60 * time.Second

// Sweep deletes the expired documents of every collection of the store, the
// expired chunks, and the chunk generations that no document references any
// more (see sweepOrphans), and returns how many documents it deleted. Only
// documents whose _id belongs to the collection's module are touched, so
// that other collections of the database (the bot's trades) are safe.
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
	// The generations last: those of the keys deleted above are
	// unreferenced now, and each is judged before it may expire.
	n, err := s.sweepOrphans(ctx, db)
	total += n
	if err != nil {
		return total, err
	}
	res, err := db.Collection(GenerationCollection).DeleteMany(ctx, bson.D{expired})
	if err != nil {
		return total, s.client.opError(ctx, "sweep", err)
	}
	return total + res.DeletedCount, nil
}

type generation struct {
	gen, key string
	n        int
}

// sweepable reports whether the sweep may judge a generation made at made,
// whose document expires at exp (zero: never), at now: once it is older
// than any Put under way, or once its key has expired, whatever the key's
// TTL, so that the bot's overwrite of a short-lived chunked key loses its
// stale chunks field too.
func sweepable(made, exp, now time.Time) bool {
	return !made.After(now.Add(-putGuard)) || !exp.IsZero() && !exp.Add(-generationGrace).After(now)
}

// sweepOrphans deletes the generations whose key's document no longer
// points at them, as the package documentation says, or whose deletion was
// cut short; only sweepable ones are judged. It costs one read of
// GenerationCollection and, when some generation is old enough, one $in
// query per collection and BatchSize owners.
func (s *Store) sweepOrphans(ctx context.Context, db *mongo.Database) (int64, error) {
	now := s.clock.Now()
	cur, err := db.Collection(GenerationCollection).Find(ctx, bson.D{})
	if err != nil {
		return 0, s.client.opError(ctx, "sweep", err)
	}
	byColl := make(map[string][]generation)
	var order []string
	for cur.Next(ctx) {
		gen, _ := cur.Current.Lookup(fieldID).StringValueOK()
		key, _ := cur.Current.Lookup("key").StringValueOK()
		n, _ := cur.Current.Lookup("n").AsInt64OK()
		made, ok := generationTime(gen)
		exp, _ := cur.Current.Lookup(fieldExpires).TimeOK()
		if !ok || key == "" || n < 1 || n > 99_999 || !sweepable(made, exp, now) {
			continue
		}
		c := collectionOf(key)
		if _, ok := byColl[c]; !ok {
			order = append(order, c)
		}
		byColl[c] = append(byColl[c], generation{gen: gen, key: key, n: int(n)})
	}
	err = cur.Err()
	cur.Close(context.WithoutCancel(ctx))
	if err != nil {
		return 0, s.client.opError(ctx, "sweep", err)
	}
	var total int64
	for _, c := range order {
		for batch := range slices.Chunk(byColl[c], BatchSize) {
			n, err := s.dropUnreferenced(ctx, db, db.Collection(c), batch)
			total += n
			if err != nil {
				return total, s.client.opError(ctx, "sweep", err)
			}
		}
	}
	return total, nil
}

// dropUnreferenced deletes the generations of gens that their owners'
// documents do not reference: a document references its generation when it
// holds no value of its own.
func (s *Store) dropUnreferenced(ctx context.Context, db *mongo.Database, coll *mongo.Collection, gens []generation) (int64, error) {
	owners := make([]string, len(gens))
	for i, g := range gens {
		owners[i] = g.key
	}
	filter := bson.D{{Key: fieldID, Value: bson.D{{Key: "$in", Value: owners}}}, {Key: fieldValue, Value: bson.D{{Key: "$exists", Value: false}}}}
	cur, err := coll.Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: fieldChunks, Value: 1}}))
	if err != nil {
		return 0, err
	}
	live := make(map[string]bool)
	for cur.Next(ctx) {
		if ref, err := decodeChunkRef(cur.Current.Lookup(fieldChunks)); err == nil {
			live[ref.gen] = true
		}
	}
	err = cur.Err()
	cur.Close(context.WithoutCancel(ctx))
	if err != nil {
		return 0, err
	}
	var total int64
	for _, g := range gens {
		if live[g.gen] {
			continue
		}
		stale := bson.D{{Key: fieldID, Value: g.key}, {Key: fieldChunks + ".gen", Value: g.gen}, {Key: fieldValue, Value: bson.D{{Key: "$exists", Value: true}}}}
		if _, err := coll.UpdateMany(ctx, stale, bson.D{{Key: "$unset", Value: bson.D{{Key: fieldChunks, Value: ""}}}}); err != nil {
			return total, err
		}
		n, err := s.deleteChunks(ctx, db, &chunkRef{gen: g.gen, n: g.n})
		total += n
		if err != nil {
			return total, err
		}
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
