package botkv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/kvshadow/kvshadow/kv"
)

// Adapter is a kv.Store in the shape of the store many Go bots share:
//
//	type KVStore interface {
//		Get(ctx context.Context, key string) ([]byte, error)
//		GetJSON(ctx context.Context, key string, dst any) error
//		Put(ctx context.Context, key string, val []byte) error
//		PutJSON(ctx context.Context, key string, val any) error
//		Delete(ctx context.Context, key string) error
//		List(ctx context.Context, prefix string) ([]string, error)
//	}
//
// A missing key is the bot's own not-found error, returned bare so that
// the bot's == comparisons hold; writes carry no expiry; List pages to the
// end. Every other error is the store's, matching kv's sentinels
// (kv.ErrInvalidKey, kv.ErrUnavailable, ...).
//
// GetJSON keeps kvshadow's contract (kv.GetJSON): a value that is not
// JSON for dst (malformed, of another type, empty) reads as not found, so
// that one corrupt record never crashes the bot. A bot that starts afresh
// on not found then overwrites that record: each such read is logged (a
// warning naming the module, never the value) and counted by the metric
// kvshadow.bot.json_unreadable, by module, so that it is seen.
type Adapter struct {
	store      kv.Store
	notFound   error
	log        *slog.Logger
	unreadable metric.Int64Counter
}

// NewAdapter adapts s, returning notFound for a missing key. Its warnings
// go to WithLogger's logger (slog.Default()) and its metric to
// WithMeterProvider's (the global one); Store.Adapter uses the Store's.
func NewAdapter(s kv.Store, notFound error, opts ...Option) (*Adapter, error) {
	p := plumb(opts)
	return newAdapter(s, notFound, p.logger, p.mp)
}

// Adapter adapts the Store's KV, with its logger and meter provider.
func (s *Store) Adapter(notFound error) (*Adapter, error) {
	return newAdapter(s.KV, notFound, s.log, s.mp)
}

func newAdapter(s kv.Store, notFound error, log *slog.Logger, mp metric.MeterProvider) (*Adapter, error) {
	if s == nil || notFound == nil {
		return nil, fmt.Errorf("%w: an Adapter needs a store and the bot's not-found error", ErrConfig)
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	c, err := mp.Meter("github.com/kvshadow/kvshadow/botkv").Int64Counter("kvshadow.bot.json_unreadable",
		metric.WithUnit("{record}"), metric.WithDescription("GetJSON reads of a value that is not JSON for the destination (malformed, another type, empty), answered as not found"))
	if err != nil {
		return nil, err
	}
	return &Adapter{store: s, notFound: notFound, log: log, unreadable: c}, nil
}

// Module is the Adapter of module's keys ("<module>:<key>", kv.Namespace),
// for a bot without a prefixing wrapper of its own.
func (a *Adapter) Module(module string) (*Adapter, error) {
	ns, err := kv.Namespace(a.store, module)
	if err != nil {
		return nil, err
	}
	b := *a
	b.store = ns
	return &b, nil
}

// Get returns key's value, or the bot's not-found error.
func (a *Adapter) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := a.store.Get(ctx, key)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, a.notFound
	}
	return v, err
}

// GetJSON decodes key's JSON value into dst, a non-nil pointer; a missing
// key or a value that is not JSON for dst is the bot's not-found error.
func (a *Adapter) GetJSON(ctx context.Context, key string, dst any) error {
	if rv := reflect.ValueOf(dst); rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("%w: GetJSON decodes into a non-nil pointer, not %T", kv.ErrInvalidArgument, dst)
	}
	v, err := a.Get(ctx, key)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(v, dst); err != nil {
		module := kv.ModuleOf(key)
		if m, ok := a.store.(interface{ Module() string }); ok {
			module = m.Module()
		}
		a.unreadable.Add(ctx, 1, metric.WithAttributes(attribute.String("db.namespace", module)))
		a.log.WarnContext(ctx, "botkv: a JSON record that does not decode is answered as not found",
			slog.String("namespace", module), slog.Int("bytes", len(v)), slog.String("reason", kv.JSONReason(err)))
		return a.notFound
	}
	return nil
}

// Put writes key's value, with no expiry.
func (a *Adapter) Put(ctx context.Context, key string, val []byte) error {
	return a.store.Put(ctx, key, val, kv.PutOptions{})
}

// PutJSON writes val encoded as JSON, with no expiry; a value JSON cannot
// encode is kv.ErrInvalidJSON.
func (a *Adapter) PutJSON(ctx context.Context, key string, val any) error {
	return kv.PutJSON(ctx, a.store, key, val, kv.PutOptions{})
}

// Delete removes key; a missing key is no error.
func (a *Adapter) Delete(ctx context.Context, key string) error {
	return a.store.Delete(ctx, key)
}

// List returns every key that starts with prefix, in byte order, paging to
// the end. A prefix is at most 512 bytes of UTF-8 (kv.ErrInvalidPrefix
// past it).
func (a *Adapter) List(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	opts := kv.ListOptions{Prefix: prefix, Limit: kv.MaxListLimit}
	for {
		res, err := a.store.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		keys = append(keys, res.Keys...)
		if res.Done {
			return keys, nil
		}
		opts.Cursor = res.Cursor
	}
}
