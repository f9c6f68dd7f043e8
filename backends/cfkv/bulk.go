package cfkv

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	cf "github.com/cloudflare/cloudflare-go/v6/kv"
	"github.com/cloudflare/cloudflare-go/v6/option"

	"github.com/kvshadow/kvshadow/kv"
)

// The API's bulk limits.
const (
	maxBulkGet    = 100
	maxBulkWrite  = 10_000
	maxBulkBytes  = 95_000_000 // under the API's 100 MB per request, with room for the envelope
	pairOverhead  = 96         // JSON punctuation and field names of one pair
	writeInterval = time.Second
)

// opBulkGet names bulk/get in errors, and tells its 413 (an answer over
// 25 MiB) from a write's.
const opBulkGet = "bulk get"

// GetMany implements kv.BulkGetter: one request per 100 distinct keys, with
// their expirations and metadata, each value byte for byte (exactValue). An
// answer past 25 MiB is an error matching kv.ErrTooLarge (kv.ReadSplit asks
// again in smaller pieces).
func (s *Store) GetMany(ctx context.Context, keys []string) ([]kv.Entry, error) {
	if err := kv.ValidateKeys(keys); err != nil {
		return nil, err
	}
	keys = distinct(keys)
	out := make([]kv.Entry, 0, len(keys))
	for chunk := range slices.Chunk(keys, maxBulkGet) {
		got, err := s.getChunk(ctx, chunk)
		if errors.Is(err, errAnswerTooLarge) {
			got, err = s.getSplit(ctx, chunk)
		}
		if err != nil {
			return nil, err
		}
		for _, e := range got {
			e, err := s.exactValue(ctx, e)
			if errors.Is(err, kv.ErrNotFound) {
				continue // deleted since
			}
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// getSplit reads keys whose bulk answer this client cannot read whole in
// halves, down to a key alone, read by its value's and metadata's own GETs.
func (s *Store) getSplit(ctx context.Context, keys []string) ([]kv.Entry, error) {
	var out []kv.Entry
	err := kv.ReadSplit(ctx, keys, s.getChunk, s.getSeparately, func(_ []string, got []kv.Entry, err error) error {
		out = append(out, got...)
		return err
	})
	return out, err
}

type bulkValue struct {
	Value      *string         `json:"value"`
	Expiration float64         `json:"expiration"`
	Metadata   json.RawMessage `json:"metadata"`
}

func (s *Store) getChunk(ctx context.Context, keys []string) ([]kv.Entry, error) {
	var params cf.NamespaceBulkGetParams
	params.AccountID.Value = s.cfg.AccountID
	params.Keys.Value, params.Keys.Present = keys, true
	params.Type.Value, params.Type.Present = cf.NamespaceBulkGetParamsTypeText, true
	params.WithMetadata.Value, params.WithMetadata.Present = true, true
	// Read raw: the SDK's typed result is nil if one key is missing.
	var body []byte
	err := s.callRaw(ctx, opBulkGet, &body, func(ctx context.Context, opts ...option.RequestOption) error {
		_, err := s.api.BulkGet(ctx, s.cfg.NamespaceID, params, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	var env struct {
		Result struct {
			Values map[string]json.RawMessage `json:"values"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, &APIError{Op: opBulkGet, Status: 200, Message: "the result is not a map of values"}
	}
	var entries []kv.Entry
	for _, k := range keys {
		raw, ok := env.Result.Values[k]
		if !ok || string(raw) == "null" {
			continue // missing
		}
		var v bulkValue
		if err := json.Unmarshal(raw, &v); err != nil || v.Value == nil {
			return nil, &APIError{Op: opBulkGet, Status: 200, Message: "a value is not a text value with metadata"}
		}
		e := kv.Entry{Key: k, Value: []byte(*v.Value), Metadata: kv.NormalizeMetadata(v.Metadata)}
		if v.Expiration > 0 {
			e.Expiration = time.Unix(int64(v.Expiration), 0)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// PutMany implements kv.BulkPutter: requests of at most MaxBulkWrite pairs and
// about 95 MB each, a value not valid UTF-8 as base64. Keys the API reports
// in unsuccessful_keys (the per-key write rate) are sent again, a second or
// more later, within the retry budget; the error says how many are left.
func (s *Store) PutMany(ctx context.Context, entries []kv.Entry) error {
	if err := kv.ValidateEntries(entries, s.cfg.Clock.Now()); err != nil {
		return err
	}
	// A key written twice in one batch keeps its last value, as written in
	// order; sending it once also spares it the per-key write rate.
	last := make(map[string]int, len(entries))
	for i, e := range entries {
		last[e.Key] = i
	}
	pairs := make([]bulkPair, 0, len(last))
	sizes := make([]int, 0, len(last))
	for i, e := range entries {
		if last[e.Key] != i {
			continue
		}
		p := bulkPair{Key: e.Key}
		if utf8.Valid(e.Value) {
			p.Value = string(e.Value)
		} else {
			p.Value, p.Base64 = base64.StdEncoding.EncodeToString(e.Value), true
		}
		if !e.Expiration.IsZero() {
			p.Expiration = unixCeil(e.Expiration)
		}
		p.Metadata = kv.NormalizeMetadata(e.Metadata)
		pairs = append(pairs, p)
		sizes = append(sizes, 6*len(p.Key)+6*len(p.Value)+len(p.Metadata)+pairOverhead) // worst-case JSON escaping
	}
	var params cf.NamespaceBulkUpdateParams
	params.AccountID.Value = s.cfg.AccountID
	for _, chunk := range chunkBySize(pairs, sizes, s.cfg.MaxBulkWrite) {
		err := writeBulk(ctx, s, "bulk put", chunk, func(ctx context.Context, opts ...option.RequestOption) ([]string, error) {
			res, err := s.api.BulkUpdate(ctx, s.cfg.NamespaceID, params, opts...)
			if err != nil {
				return nil, err
			}
			return res.UnsuccessfulKeys, nil
		}, func(p bulkPair) string { return p.Key })
		if err != nil {
			return err
		}
	}
	return nil
}

type bulkPair struct {
	Key        string `json:"key"`
	Value      string `json:"value"`
	Base64     bool   `json:"base64,omitempty"`
	Expiration int64  `json:"expiration,omitempty"`
	// Metadata goes as the JSON value it is; none is no field.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// chunkBySize cuts pairs into requests of at most maxPairs pairs and
// maxBulkBytes of JSON.
func chunkBySize(pairs []bulkPair, sizes []int, maxPairs int) [][]bulkPair {
	var chunks [][]bulkPair
	start, bytes := 0, 0
	for i := range pairs {
		if i > start && (i-start == maxPairs || bytes+sizes[i] > maxBulkBytes) {
			chunks = append(chunks, pairs[start:i])
			start, bytes = i, 0
		}
		bytes += sizes[i]
	}
	if start < len(pairs) {
		chunks = append(chunks, pairs[start:])
	}
	return chunks
}

// DeleteMany implements kv.BulkDeleter: requests of at most MaxBulkWrite keys,
// with unsuccessful keys sent again as PutMany does.
func (s *Store) DeleteMany(ctx context.Context, keys []string) error {
	if err := kv.ValidateKeys(keys); err != nil {
		return err
	}
	var params cf.NamespaceBulkDeleteParams
	params.AccountID.Value = s.cfg.AccountID
	for chunk := range slices.Chunk(distinct(keys), s.cfg.MaxBulkWrite) {
		err := writeBulk(ctx, s, "bulk delete", chunk, func(ctx context.Context, opts ...option.RequestOption) ([]string, error) {
			res, err := s.api.BulkDelete(ctx, s.cfg.NamespaceID, params, opts...)
			if err != nil {
				return nil, err
			}
			return res.UnsuccessfulKeys, nil
		}, func(k string) string { return k })
		if err != nil {
			return err
		}
	}
	return nil
}

// bulkCall is one try of a bulk write, its body given in opts: the keys the
// API reported unsuccessful, or how the SDK call failed.
type bulkCall func(ctx context.Context, opts ...option.RequestOption) (unsuccessful []string, err error)

// writeBulk sends one batch, then again only the items the API reported
// unsuccessful, until none are left or the retries are spent. The body is
// ours, items encoded as JSON (why: the package doc).
func writeBulk[T any](ctx context.Context, s *Store, op string, items []T, call bulkCall, key func(T) string) error {
	pending := items
	return s.retry(ctx, func(ctx context.Context) outcome {
		var unsuccessful []string
		body, merr := json.Marshal(pending)
		out := s.send(ctx, op, func(ctx context.Context, opts ...option.RequestOption) (err error) {
			if merr != nil {
				return merr
			}
			unsuccessful, err = call(ctx, append(opts, option.WithRequestBody("application/json", body))...)
			return err
		})
		if out.err != nil || len(unsuccessful) == 0 {
			return out
		}
		failed := make(map[string]bool, len(unsuccessful))
		for _, k := range unsuccessful {
			failed[k] = true
		}
		var again []T
		for _, it := range pending {
			if failed[key(it)] {
				again = append(again, it)
			}
		}
		if len(again) == 0 {
			return outcome{err: &APIError{Op: op, Status: 200, Message: "the API reported unsuccessful keys that were not sent"}}
		}
		pending = again
		return outcome{
			err:        fmt.Errorf("cfkv: %s: %d of %d keys were not written (Workers KV takes one write per second per key)", op, len(again), len(items)),
			retry:      true,
			retryAfter: writeInterval,
		}
	})
}

// distinct returns keys without repeats, in first-seen order.
func distinct(keys []string) []string {
	out := make([]string, 0, len(keys))
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}
