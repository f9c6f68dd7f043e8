package kvapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// bulkPair is one pair of a bulk write, as the API takes it.
type bulkPair struct {
	Key           *string         `json:"key"`
	Value         *string         `json:"value"`
	Base64        bool            `json:"base64"`
	Expiration    json.Number     `json:"expiration"`
	ExpirationTTL json.Number     `json:"expiration_ttl"`
	Metadata      json.RawMessage `json:"metadata"`
}

// bulkResult is the result of a bulk write or delete.
type bulkResult struct {
	SuccessfulKeyCount int      `json:"successful_key_count"`
	UnsuccessfulKeys   []string `json:"unsuccessful_keys"`
}

// decodeBody decodes a JSON request body of at most MaxBulkBytes.
func decodeBody(r *http.Request, v any) *apiError {
	raw, e := readLimited(r.Body, MaxBulkBytes)
	if e != nil {
		return e
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: the body is not the expected JSON")
	}
	return nil
}

func (s *Server) bulkPut(w http.ResponseWriter, r *http.Request, req request) {
	var pairs []bulkPair
	if e := decodeBody(r, &pairs); e != nil {
		writeError(w, e)
		return
	}
	if len(pairs) > MaxBulkWrite {
		writeError(w, errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: %d pairs, a bulk write takes at most %d", len(pairs), MaxBulkWrite))
		return
	}
	now := s.clock.Now()
	entries := make([]kv.Entry, 0, len(pairs))
	for i, p := range pairs {
		e, ae := pairEntry(p, now)
		if ae != nil {
			ae.message = fmt.Sprintf("pair %d: %s", i, ae.message)
			writeError(w, ae) // a refused batch writes nothing
			return
		}
		entries = append(entries, e)
	}
	entries = lastOfEach(entries)
	if e := refuseMetadata(req.store, entries...); e != nil {
		writeError(w, e)
		return
	}
	accepted, refused := s.limitWrites(req.ns, entries, func(e kv.Entry) string { return e.Key }, now)
	if err := putEntries(r, req.store, accepted); err != nil {
		writeError(w, storeError(err))
		return
	}
	writeResult(w, bulkResult{SuccessfulKeyCount: len(accepted), UnsuccessfulKeys: refused}, nil)
}

// pairEntry checks one pair with the API's rules and codes.
func pairEntry(p bulkPair, now time.Time) (kv.Entry, *apiError) {
	if p.Key == nil || p.Value == nil {
		return kv.Entry{}, errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: key and value are required")
	}
	if e := checkKey(*p.Key); e != nil {
		return kv.Entry{}, e
	}
	value := []byte(*p.Value)
	if p.Base64 {
		var err error
		if value, err = base64.StdEncoding.DecodeString(*p.Value); err != nil {
			return kv.Entry{}, errorf(http.StatusBadRequest, CodeMalformedValue, "malformed value: not base64")
		}
	}
	if len(value) > kv.MaxValueSize {
		return kv.Entry{}, errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "payload too large: a value holds at most %d bytes", kv.MaxValueSize)
	}
	md, e := checkMetadata(p.Metadata)
	if e != nil {
		return kv.Entry{}, e
	}
	opts, e := parseExpiry(p.Expiration.String(), p.ExpirationTTL.String(), now)
	if e != nil {
		return kv.Entry{}, e
	}
	return kv.Entry{Key: *p.Key, Value: value, Expiration: opts.ExpiresAt(now), Metadata: md}, nil
}

// lastOfEach keeps the last item of each key, in order: a batch that names
// a key twice writes it once, with its last value.
func lastOfEach(items []kv.Entry) []kv.Entry {
	last := make(map[string]int, len(items))
	for i, it := range items {
		last[it.Key] = i
	}
	if len(last) == len(items) {
		return items
	}
	out := make([]kv.Entry, 0, len(last))
	for i, it := range items {
		if last[it.Key] == i {
			out = append(out, it)
		}
	}
	return out
}

// putEntries writes in one call when the store can.
func putEntries(r *http.Request, store kv.Store, entries []kv.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	if bp, ok := store.(kv.BulkPutter); ok {
		return bp.PutMany(r.Context(), entries)
	}
	for _, e := range entries {
		if err := kv.PutEntry(r.Context(), store, e); err != nil {
			return err
		}
	}
	return nil
}

// limitWrites splits a bulk call's items into those the per-key write rate
// lets through and the keys it refuses.
func (s *Server) limitWrites(ns string, items []kv.Entry, key func(kv.Entry) string, now time.Time) (accepted []kv.Entry, refused []string) {
	refused = []string{}
	if !s.faults.rateLimited() {
		return items, refused
	}
	accepted = items[:0:0]
	for _, it := range items {
		if ok, _ := s.limiter.allow(ns, key(it), now); ok {
			accepted = append(accepted, it)
		} else {
			refused = append(refused, key(it))
		}
	}
	return accepted, refused
}

func (s *Server) bulkDelete(w http.ResponseWriter, r *http.Request, req request) {
	var keys []string
	if e := decodeBody(r, &keys); e != nil {
		writeError(w, e)
		return
	}
	if len(keys) > MaxBulkWrite {
		writeError(w, errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: %d keys, a bulk delete takes at most %d", len(keys), MaxBulkWrite))
		return
	}
	items := make([]kv.Entry, len(keys))
	for i, k := range keys {
		if e := checkKey(k); e != nil {
			e.message = fmt.Sprintf("key %d: %s", i, e.message)
			writeError(w, e)
			return
		}
		items[i].Key = k
	}
	items = lastOfEach(items)
	accepted, refused := s.limitWrites(req.ns, items, func(e kv.Entry) string { return e.Key }, s.clock.Now())
	if err := deleteKeys(r, req.store, accepted); err != nil {
		writeError(w, storeError(err))
		return
	}
	writeResult(w, bulkResult{SuccessfulKeyCount: len(accepted), UnsuccessfulKeys: refused}, nil)
}

func deleteKeys(r *http.Request, store kv.Store, items []kv.Entry) error {
	if len(items) == 0 {
		return nil
	}
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = it.Key
	}
	if bd, ok := store.(kv.BulkDeleter); ok {
		return bd.DeleteMany(r.Context(), keys)
	}
	for _, k := range keys {
		if err := store.Delete(r.Context(), k); err != nil {
			return err
		}
	}
	return nil
}

// bulkGetBody is the request of bulk/get.
type bulkGetBody struct {
	Keys         []string `json:"keys"`
	Type         string   `json:"type"`
	WithMetadata bool     `json:"withMetadata"`
}

// bulkValue is one value of bulk/get withMetadata.
type bulkValue struct {
	Value      any   `json:"value"`
	Metadata   any   `json:"metadata"`
	Expiration int64 `json:"expiration,omitempty"`
}

func (s *Server) bulkGet(w http.ResponseWriter, r *http.Request, req request) {
	var body bulkGetBody
	if e := decodeBody(r, &body); e != nil {
		writeError(w, e)
		return
	}
	switch {
	case body.Type == "":
		body.Type = "text"
	case body.Type != "text" && body.Type != "json":
		writeError(w, errorf(http.StatusBadRequest, CodeInvalidRequest, `invalid request: type must be "text" or "json"`))
		return
	}
	if len(body.Keys) > MaxBulkGet {
		writeError(w, errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: %d keys, a bulk get takes at most %d", len(body.Keys), MaxBulkGet))
		return
	}
	for i, k := range body.Keys {
		if e := checkKey(k); e != nil {
			e.message = fmt.Sprintf("key %d: %s", i, e.message)
			writeError(w, e)
			return
		}
	}
	found, err := s.readMany(r, req, body.Keys)
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	values := make(map[string]any, len(body.Keys))
	for _, k := range body.Keys {
		e, ok := found[k]
		if !ok {
			values[k] = nil
			continue
		}
		var v any = string(e.Value) // text: invalid UTF-8 becomes U+FFFD, as in Workers KV
		if body.Type == "json" {
			if !json.Valid(e.Value) {
				writeError(w, errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: at least one of the requested keys holds a value that is not JSON"))
				return
			}
			v = json.RawMessage(e.Value)
		}
		if body.WithMetadata {
			bv := bulkValue{Value: v, Metadata: metadataResult(e.Metadata)}
			if !e.Expiration.IsZero() {
				bv.Expiration = e.Expiration.Unix()
			}
			v = bv
		}
		values[k] = v
	}
	writeResult(w, map[string]any{"values": values}, nil)
}

// readMany reads keys in one store call when it can; reads from an edge
// location go through its cache one key at a time.
func (s *Server) readMany(r *http.Request, req request, keys []string) (map[string]kv.Entry, error) {
	found := make(map[string]kv.Entry, len(keys))
	bg, bulk := req.store.(kv.BulkGetter)
	if bulk && (req.location == "" || s.faults.consistencyWindow() <= 0) {
		entries, err := bg.GetMany(r.Context(), keys)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			found[e.Key] = e
		}
		return found, nil
	}
	for _, k := range keys {
		e, err := s.readAt(r.Context(), req.ns, req.store, req.location, k)
		switch {
		case err == nil:
			e.Key = k
			found[k] = e
		case !errors.Is(err, kv.ErrNotFound):
			return nil, err
		}
	}
	return found, nil
}
