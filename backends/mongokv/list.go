package mongokv

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kvshadow/kvshadow/kv"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// List implements kv.Store as the package documentation's Listing says: an
// _id range per collection the prefix reaches, limit+1 keys each so that
// the page knows whether more follow, merged.
func (s *Store) List(ctx context.Context, opts kv.ListOptions) (kv.ListResult, error) {
	limit, err := kv.ValidateListOptions(opts)
	if err != nil {
		return kv.ListResult{}, err
	}
	after, err := kv.DecodeCursor(opts.Cursor, opts.Prefix)
	if err != nil {
		return kv.ListResult{}, err
	}
	db, err := s.database(ctx)
	if err != nil {
		return kv.ListResult{}, err
	}
	colls, err := s.collectionsFor(ctx, db, opts.Prefix)
	if err != nil {
		return kv.ListResult{}, err
	}
	now := s.clock.Now()
	runs := make([][]listed, 0, len(colls))
	for _, c := range colls {
		run, err := s.rangeKeys(ctx, db.Collection(c.name), c.foreign, keyRange{prefix: opts.Prefix, after: after, n: limit + 1, now: now})
		if err != nil {
			return kv.ListResult{}, err
		}
		if len(run) > 0 {
			runs = append(runs, run)
		}
	}
	page, more := mergeRuns(runs, limit)
	res := kv.ListResult{Keys: make([]string, len(page)), Info: make([]kv.KeyInfo, len(page)), Done: !more}
	for i, l := range page {
		res.Keys[i], res.Info[i] = l.key, l.info
	}
	if more {
		res.Cursor = kv.EncodeCursor(res.Keys[len(res.Keys)-1])
	}
	return res, nil
}

type listed struct {
	key  string
	info kv.KeyInfo
}

// listColl is a collection a listing reads. foreign is set when the
// collection was found by name and may hold documents that are not keys of
// its module (another application's collection with a module-like name).
type listColl struct {
	name    string
	foreign bool
}

// collectionsFor names the collections that can hold keys starting with
// prefix. A prefix with a ":" fixes the module, so one collection; a prefix
// without one may be the start of several modules' names, or of keys without
// a module.
func (s *Store) collectionsFor(ctx context.Context, db *mongo.Database, prefix string) ([]listColl, error) {
	if strings.Contains(prefix, ":") {
		return []listColl{{name: collectionOf(prefix)}}, nil
	}
	mapped := strings.ReplaceAll(prefix, "-", "_")
	if prefix != "" && !isModule(prefix) {
		return []listColl{{name: DefaultCollection}}, nil
	}
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return nil, s.client.opError(ctx, "list", err)
	}
	var out []listColl
	for _, n := range names {
		switch {
		case n == DefaultCollection:
			out = append(out, listColl{name: n})
		case isModuleCollection(n) && strings.HasPrefix(n, mapped):
			out = append(out, listColl{name: n, foreign: true})
		}
	}
	return out, nil
}

// keyRange is what rangeKeys reads: up to n keys live at now that start
// with prefix and follow after.
type keyRange struct {
	prefix, after string
	n             int
	now           time.Time
}

// rangeKeys reads the keys of r in coll, in _id order, with their expiries
// and metadata.
func (s *Store) rangeKeys(ctx context.Context, coll *mongo.Collection, foreign bool, r keyRange) ([]listed, error) {
	prefix, after, n, now := r.prefix, r.after, r.n, r.now
	rng := bson.D{{Key: "$gte", Value: prefix}}
	if after != "" {
		rng = bson.D{{Key: "$gt", Value: after}}
	}
	if upper, ok := prefixEnd(prefix); ok {
		rng = append(rng, bson.E{Key: "$lt", Value: upper})
	}
	if foreign {
		rng = append(rng, moduleIDFilter(coll.Name())[1])
	}
	filter := bson.D{{Key: fieldID, Value: rng}, notExpired(now)}
	opts := options.Find().
		SetSort(bson.D{{Key: fieldID, Value: 1}}).
		SetProjection(infoProjection).
		// A negative limit asks for a single batch of n (not the default
		// first batch of 101): n keys with their info fit in one reply
		// (1.6 MB at most), and the server closes the cursor at once
		// (FerretDB would otherwise keep a short page's cursor open).
		SetLimit(-int64(n)).
		SetBatchSize(int32(n))
	cur, err := coll.Find(ctx, filter, opts)
	if err != nil {
		return nil, s.client.opError(ctx, "list", err)
	}
	defer cur.Close(context.WithoutCancel(ctx))
	run := make([]listed, 0, min(n, 64))
	for cur.Next(ctx) {
		// A string range matches only string _ids (type bracketing).
		d, err := decodeInfo(cur.Current)
		if err != nil {
			return nil, err
		}
		run = append(run, listed{key: d.key, info: kv.KeyInfo{Expiration: d.exp, Metadata: d.md}})
	}
	if err := cur.Err(); err != nil {
		return nil, s.client.opError(ctx, "list", err)
	}
	return run, nil
}

// prefixEnd returns the least valid UTF-8 string greater than every string
// that starts with prefix, or false when there is none (the empty prefix).
// Incrementing the last rune keeps the bound valid UTF-8, which the server
// requires of strings; no valid key lies between the prefix's last key and
// the bound.
func prefixEnd(prefix string) (string, bool) {
	for prefix != "" {
		r, size := utf8.DecodeLastRuneInString(prefix)
		prefix = prefix[:len(prefix)-size]
		switch {
		case r == utf8.MaxRune:
			continue
		case r == 0xD7FF:
			return prefix + string(rune(0xE000)), true // skip the surrogates
		}
		return prefix + string(r+1), true
	}
	return "", false
}

// mergeRuns merges sorted runs of keys from different collections (no key is
// in two) and returns the first limit, and whether more keys follow them.
func mergeRuns(runs [][]listed, limit int) ([]listed, bool) {
	switch len(runs) {
	case 0:
		return []listed{}, false
	case 1:
		if len(runs[0]) > limit {
			return runs[0][:limit], true
		}
		return runs[0], false
	}
	total := 0
	for _, r := range runs {
		total += len(r)
	}
	out := make([]listed, 0, min(total, limit))
	for len(out) < limit {
		best := -1
		for i, r := range runs {
			if len(r) > 0 && (best < 0 || r[0].key < runs[best][0].key) {
				best = i
			}
		}
		if best < 0 {
			return out, false
		}
		out = append(out, runs[best][0])
		runs[best] = runs[best][1:]
	}
	more := slices.ContainsFunc(runs, func(r []listed) bool { return len(r) > 0 })
	return out, more
}
