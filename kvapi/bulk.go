package kvapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

type bulkPair struct {
	Key           *bodyKey        `json:"key"`
	Value         *string         `json:"value"`
	Base64        bool            `json:"base64"`
	Expiration    json.Number     `json:"expiration"`
	ExpirationTTL json.Number     `json:"expiration_ttl"`
	Metadata      json.RawMessage `json:"metadata"`
}

type bulkResult struct {
	SuccessfulKeyCount int      `json:"successful_key_count"`
	UnsuccessfulKeys   []string `json:"unsuccessful_keys"`
}

func (s *Server) bulkPut(w http.ResponseWriter, r *http.Request, req request) {
	pairs, e := decodeArray[bulkPair](r, MaxBulkWrite, "write")
	if e != nil {
		writeError(w, e)
		return
	}
	now := s.clock.Now()
	entries := make([]kv.Entry, 0, len(pairs))
	for i, p := range pairs {
		e, ae := s.pairEntry(p, now)
		if ae != nil {
			ae.message = fmt.Sprintf("pair %d: %s", i, ae.message)
			writeError(w, ae) // a refused batch writes nothing
			return
		}
		entries = append(entries, e)
	}
	entries = lastOfEach(entries)
	if e := refuseMetadata(req.ns.store, entries...); e != nil {
		writeError(w, e)
		return
	}
	accepted, refused := s.limitWrites(req.ns.id, entries, now)
	if err := putEntries(r, req.ns.store, accepted); err != nil {
		writeError(w, storeError(err))
		return
	}
	writeResult(w, bulkResult{SuccessfulKeyCount: len(accepted), UnsuccessfulKeys: refused}, nil)
}

func (s *Server) pairEntry(p bulkPair, now time.Time) (kv.Entry, *apiError) {
	if p.Key == nil || p.Value == nil {
		return kv.Entry{}, errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: key and value are required")
	}
	key := string(*p.Key)
	if e := s.checkKey(key); e != nil {
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
		return kv.Entry{}, errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "Value length of %d exceeds limit of %d.", len(value), kv.MaxValueSize)
	}
	md, e := checkMetadata(p.Metadata)
	if e != nil {
		return kv.Entry{}, e
	}
	opts, e := parseExpiry(p.Expiration.String(), p.ExpirationTTL.String(), now)
	if e != nil {
		return kv.Entry{}, e
	}
	return kv.Entry{Key: key, Value: value, Expiration: opts.ExpiresAt(now), Metadata: md}, nil
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
func (s *Server) limitWrites(ns string, items []kv.Entry, now time.Time) (accepted []kv.Entry, refused []string) {
	refused = []string{}
	if !s.faults.rateLimited() {
		return items, refused
	}
	accepted = items[:0:0]
	for _, it := range items {
		if ok, _ := s.limiter.allow(ns, it.Key, now); ok {
			accepted = append(accepted, it)
		} else {
			refused = append(refused, it.Key)
		}
	}
	return accepted, refused
}

func (s *Server) bulkDelete(w http.ResponseWriter, r *http.Request, req request) {
	raw, e := decodeArray[bodyKey](r, MaxBulkWrite, "delete")
	if e != nil {
		writeError(w, e)
		return
	}
	keys, e := s.keyList(raw)
	if e != nil {
		writeError(w, e)
		return
	}
	items := make([]kv.Entry, len(keys))
	for i, k := range keys {
		items[i].Key = k
	}
	items = lastOfEach(items)
	accepted, refused := s.limitWrites(req.ns.id, items, s.clock.Now())
	if err := deleteKeys(r, req.ns.store, accepted); err != nil {
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
