package otelkv

import (
	"context"
	"encoding/json"

	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/kvshadow/kvshadow/kv"
)

// Get implements kv.Store.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	c := s.begin(ctx, opGet, kv.ModuleOf(key), key)
	v, err := s.inner.Get(c.ctx, key)
	s.end(c, err)
	return v, err
}

// Put implements kv.Store.
func (s *Store) Put(ctx context.Context, key string, value []byte, opts kv.PutOptions) error {
	c := s.begin(ctx, opPut, kv.ModuleOf(key), key)
	err := s.inner.Put(c.ctx, key, value, opts)
	s.end(c, err)
	return err
}

// Delete implements kv.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	c := s.begin(ctx, opDelete, kv.ModuleOf(key), key)
	err := s.inner.Delete(c.ctx, key)
	s.end(c, err)
	return err
}

// List implements kv.Store. Neither the prefix nor the cursor is recorded:
// both can hold the text of a key. The prefix's module is.
func (s *Store) List(ctx context.Context, opts kv.ListOptions) (kv.ListResult, error) {
	c := s.begin(ctx, opList, kv.ModuleOf(opts.Prefix), "")
	res, err := s.inner.List(c.ctx, opts)
	if err != nil {
		s.end(c, err)
		return res, err
	}
	s.end(c, nil, semconv.DBResponseReturnedRows(len(res.Keys)))
	return res, nil
}

func (s *Store) getEntry(ctx context.Context, key string) (kv.Entry, error) {
	c := s.begin(ctx, opGetEntry, kv.ModuleOf(key), key)
	e, err := s.inner.(kv.ExpiryGetter).GetEntry(c.ctx, key)
	s.end(c, err)
	return e, err
}

func (s *Store) getValue(ctx context.Context, key string) (kv.Entry, error) {
	c := s.begin(ctx, opGetValue, kv.ModuleOf(key), key)
	e, err := s.inner.(kv.MetadataStore).GetValue(c.ctx, key)
	s.end(c, err)
	return e, err
}

func (s *Store) getMetadata(ctx context.Context, key string) (json.RawMessage, error) {
	c := s.begin(ctx, opGetMetadata, kv.ModuleOf(key), key)
	md, err := s.inner.(kv.MetadataStore).GetMetadata(c.ctx, key)
	s.end(c, err)
	return md, err
}

func (s *Store) putEntry(ctx context.Context, e kv.Entry) error {
	c := s.begin(ctx, opPutEntry, kv.ModuleOf(e.Key), e.Key)
	err := s.inner.(kv.MetadataStore).PutEntry(c.ctx, e)
	s.end(c, err)
	return err
}

func (s *Store) getMany(ctx context.Context, keys []string) ([]kv.Entry, error) {
	c := s.begin(ctx, opGetMany, moduleOf(keys, keyOf), "")
	es, err := s.inner.(kv.BulkGetter).GetMany(c.ctx, keys)
	s.end(c, err, semconv.DBOperationBatchSize(len(keys)), semconv.DBResponseReturnedRows(len(es)))
	return es, err
}

func (s *Store) putMany(ctx context.Context, entries []kv.Entry) error {
	c := s.begin(ctx, opPutMany, moduleOf(entries, entryKey), "")
	err := s.inner.(kv.BulkPutter).PutMany(c.ctx, entries)
	s.end(c, err, semconv.DBOperationBatchSize(len(entries)))
	return err
}

func (s *Store) deleteMany(ctx context.Context, keys []string) error {
	c := s.begin(ctx, opDeleteMany, moduleOf(keys, keyOf), "")
	err := s.inner.(kv.BulkDeleter).DeleteMany(c.ctx, keys)
	s.end(c, err, semconv.DBOperationBatchSize(len(keys)))
	return err
}
