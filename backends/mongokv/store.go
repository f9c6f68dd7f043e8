package mongokv

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Config configures a Store. The zero value is a store on the URI's database
// (or DefaultDatabase), on the system clock, for MongoDB's document limit.
type Config struct {
	// Database holds the store's collections; empty means the database
	// named in the URI, else DefaultDatabase (the bot's, "miti99bot").
	Database string
	// Clock decides what has expired; nil means the system clock.
	Clock clock.Clock
	// MaxDocumentSize is the server's limit on a document: every value
	// that fits in one document of this size with its key (see
	// InlineLimit) is stored inline, as the bot stores it, and only larger
	// ones are chunked. Zero means MaxDocumentSize (MongoDB's 16 MiB); a
	// smaller limit (MinDocumentSize..MaxDocumentSize) is for servers that
	// have one.
	MaxDocumentSize int
}

// Store is a kv.Store over one MongoDB database. It is safe for concurrent
// use and has nothing to close: its Client does.
type Store struct {
	client *Client
	db     string
	clock  clock.Clock
	maxDoc int
}

var (
	_ kv.Store         = (*Store)(nil)
	_ kv.ExpiryGetter  = (*Store)(nil)
	_ kv.BulkGetter    = (*Store)(nil)
	_ kv.BulkPutter    = (*Store)(nil)
	_ kv.BulkDeleter   = (*Store)(nil)
	_ kv.MetadataStore = (*Store)(nil)
)

// Store returns a Store over the client.
func (c *Client) Store(cfg Config) (*Store, error) {
	db := cmp.Or(cfg.Database, c.defaultDB)
	if err := CheckDatabase(db); err != nil {
		return nil, fmt.Errorf("mongokv: %w", err)
	}
	size := cfg.MaxDocumentSize
	switch {
	case size == 0:
		size = MaxDocumentSize
	case size < MinDocumentSize || size > MaxDocumentSize:
		return nil, fmt.Errorf("mongokv: MaxDocumentSize %d is outside %d..%d", size, MinDocumentSize, MaxDocumentSize)
	}
	return &Store{client: c, db: db, clock: clock.OrReal(cfg.Clock), maxDoc: size}, nil
}

// Database names the store's database.
func (s *Store) Database() string { return s.db }

func (s *Store) database(ctx context.Context) (*mongo.Database, error) {
	conn, err := s.client.driver(ctx)
	if err != nil {
		return nil, err
	}
	return conn.Database(s.db), nil
}

// Get implements kv.Store.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	e, err := s.GetEntry(ctx, key)
	return e.Value, err
}

// GetEntry implements kv.ExpiryGetter.
func (s *Store) GetEntry(ctx context.Context, key string) (kv.Entry, error) {
	if err := kv.ValidateKey(key); err != nil {
		return kv.Entry{}, err
	}
	db, err := s.database(ctx)
	if err != nil {
		return kv.Entry{}, err
	}
	return s.getEntry(ctx, db, key)
}

// GetValue implements kv.MetadataStore: GetEntry without the metadata,
// which lives in the same document and costs nothing more to read.
func (s *Store) GetValue(ctx context.Context, key string) (kv.Entry, error) {
	e, err := s.GetEntry(ctx, key)
	e.Metadata = nil
	return e, err
}

// GetMetadata implements kv.MetadataStore without reading the value (see
// the package doc's Listing).
func (s *Store) GetMetadata(ctx context.Context, key string) (json.RawMessage, error) {
	if err := kv.ValidateKey(key); err != nil {
		return nil, err
	}
	db, err := s.database(ctx)
	if err != nil {
		return nil, err
	}
	raw, err := db.Collection(collectionOf(key)).FindOne(ctx, byID(key), infoOnly).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, kv.ErrNotFound
	}
	if err != nil {
		return nil, s.client.opError(ctx, "get metadata", err)
	}
	d, err := decodeInfo(raw)
	if err != nil {
		return nil, err
	}
	if d.expired(s.clock.Now()) {
		return nil, kv.ErrNotFound
	}
	return d.md, nil
}

var infoOnly = options.FindOne().SetProjection(infoProjection)

// maxReadAttempts bounds the retries of a read whose chunks were replaced
// under it by concurrent writes.
const maxReadAttempts = 3

// getEntry reads by _id alone and filters expiry here rather than in the
// query, so that the read is an index point lookup on every server.
func (s *Store) getEntry(ctx context.Context, db *mongo.Database, key string) (kv.Entry, error) {
	coll := db.Collection(collectionOf(key))
	for attempt := 1; ; attempt++ {
		raw, err := coll.FindOne(ctx, byID(key)).Raw()
		if errors.Is(err, mongo.ErrNoDocuments) {
			return kv.Entry{}, kv.ErrNotFound
		}
		if err != nil {
			return kv.Entry{}, s.client.opError(ctx, "get", err)
		}
		d, err := decodeDoc(raw)
		if err != nil {
			return kv.Entry{}, err
		}
		if d.expired(s.clock.Now()) {
			return kv.Entry{}, kv.ErrNotFound
		}
		if d.chunks != nil {
			d.value, err = s.readChunks(ctx, db, d.chunks)
			if errors.Is(err, errChunksGone) {
				if attempt < maxReadAttempts {
					continue
				}
				return kv.Entry{}, errors.New("mongokv: get: the value's chunks are missing or incomplete")
			}
			if err != nil {
				return kv.Entry{}, err
			}
		}
		return d.entry(), nil
	}
}

// Put implements kv.Store; it clears any metadata the key had.
func (s *Store) Put(ctx context.Context, key string, value []byte, opts kv.PutOptions) error {
	now := s.clock.Now()
	if err := kv.ValidatePut(key, value, opts, now); err != nil {
		return err
	}
	return s.put(ctx, kv.Entry{Key: key, Value: value, Expiration: opts.ExpiresAt(now)}, now)
}

// PutEntry implements kv.MetadataStore, as Put does.
func (s *Store) PutEntry(ctx context.Context, e kv.Entry) error {
	now := s.clock.Now()
	if err := kv.ValidateEntry(e, now); err != nil {
		return err
	}
	return s.put(ctx, e, now)
}

func (s *Store) put(ctx context.Context, e kv.Entry, now time.Time) error {
	db, err := s.database(ctx)
	if err != nil {
		return err
	}
	coll := collectionOf(e.Key)
	if err := s.client.ensureTTL(ctx, db, coll); err != nil {
		return err
	}
	if !s.fitsInline(e) {
		return s.putChunked(ctx, db, coll, e, now)
	}
	return s.putInline(ctx, db, coll, e)
}

var (
	upsert          = options.UpdateOne().SetUpsert(true)
	upsertReturnOld = options.FindOneAndUpdate().SetUpsert(true)
)

// putInline upserts a value that fits in the document. A concurrent first
// insert of the same key can win the upsert with a duplicate-key error (as
// MongoDB documents, and as FerretDB does often): the key exists now, so the
// upsert is retried once, as an update.
func (s *Store) putInline(ctx context.Context, db *mongo.Database, coll string, e kv.Entry) error {
	c := db.Collection(coll)
	for attempt := 0; ; attempt++ {
		_, err := c.UpdateOne(ctx, byID(e.Key), guardedUpdate(e.Value, e.Expiration, e.Metadata), upsert)
		switch {
		case err == nil:
			return nil
		case refusedByGuard(err):
			return s.replaceChunked(ctx, db, c, e.Key, replaceUpdate(e.Value, e.Expiration, e.Metadata))
		case mongo.IsDuplicateKeyError(err) && attempt == 0:
			continue
		}
		return s.client.opError(ctx, "put", err)
	}
}

// replaceChunked writes update over a key whose value may be chunked,
// returning the document it replaced so that its chunks can be deleted.
func (s *Store) replaceChunked(ctx context.Context, db *mongo.Database, c *mongo.Collection, key string, update bson.D) error {
	for attempt := 0; ; attempt++ {
		before, err := c.FindOneAndUpdate(ctx, byID(key), update, upsertReturnOld).Raw()
		switch {
		case err == nil:
			s.dropOldChunks(ctx, db, before)
			return nil
		case errors.Is(err, mongo.ErrNoDocuments):
			return nil // inserted: the key was deleted meanwhile
		case mongo.IsDuplicateKeyError(err) && attempt == 0:
			continue
		}
		return s.client.opError(ctx, "put", err)
	}
}

func (s *Store) fitsInline(e kv.Entry) bool {
	return len(e.Value) <= InlineLimit(s.maxDoc, e.Key, !e.Expiration.IsZero(), e.Metadata)
}

// Delete implements kv.Store in one round trip, returning the deleted
// document so that a chunked value's chunks can be deleted too.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := kv.ValidateKey(key); err != nil {
		return err
	}
	db, err := s.database(ctx)
	if err != nil {
		return err
	}
	return s.deleteKey(ctx, db, db.Collection(collectionOf(key)), key)
}

func (s *Store) deleteKey(ctx context.Context, db *mongo.Database, coll *mongo.Collection, key string) error {
	before, err := coll.FindOneAndDelete(ctx, byID(key)).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil
	}
	if err != nil {
		return s.client.opError(ctx, "delete", err)
	}
	s.dropOldChunks(ctx, db, before)
	return nil
}

// Connect connects the Store's Client now: see Client.Connect (a failure
// is its caller's to say).
func (s *Store) Connect(ctx context.Context) error { return s.client.Connect(ctx) }
