package kvapi

import (
	"context"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// getValue answers a value GET with one read of the store's own value and
// expiry (kv.GetValueEntry): over Workers KV, one value GET, never a
// bulk/get for the metadata this route does not return.
func (s *Server) getValue(w http.ResponseWriter, r *http.Request, req request) {
	e, err := s.valueAt(r.Context(), req.ns.id, req.ns.store, req.location, req.key)
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	// Held until the client has read it, however slowly.
	if err := req.hold.Grow(int64(len(e.Value))); err != nil {
		writeError(w, storeError(err))
		return
	}
	// The headers' values share one allocation (Header.Set makes a slice
	// for each); each is capped at its one element, so that appending to
	// one never writes over the next.
	vals := &[3]string{"application/octet-stream", strconv.Itoa(len(e.Value))}
	h := w.Header()
	h["Content-Type"], h["Content-Length"] = vals[0:1:1], vals[1:2:2]
	if !e.Expiration.IsZero() {
		vals[2] = strconv.FormatInt(e.Expiration.Unix(), 10)
		h["Expiration"] = vals[2:3:3]
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(e.Value)
}

// getMetadata answers a metadata GET with the store's own metadata read
// when it has one (over Workers KV, one metadata GET, no value).
func (s *Server) getMetadata(w http.ResponseWriter, r *http.Request, req request) {
	if ms, ok := req.ns.store.(kv.MetadataStore); ok && (req.location == "" || s.faults.consistencyWindow() <= 0) {
		md, err := ms.GetMetadata(r.Context(), req.key)
		if err != nil {
			writeError(w, storeError(err))
			return
		}
		writeResult(w, metadataResult(md), nil)
		return
	}
	e, err := s.readAt(r.Context(), req.ns.id, req.ns.store, req.location, req.key)
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	writeResult(w, metadataResult(e.Metadata), nil)
}

func (s *Server) putValue(w http.ResponseWriter, r *http.Request, req request) {
	value, md, form, e := readPutBody(r)
	if e != nil {
		writeError(w, e)
		return
	}
	var q url.Values // no query, no map to parse it into
	if r.URL.RawQuery != "" {
		q = r.URL.Query()
	}
	rawExp, rawTTL := q.Get("expiration"), q.Get("expiration_ttl")
	if rawExp == "" && rawTTL == "" {
		rawExp, rawTTL = form["expiration"], form["expiration_ttl"]
	}
	now := s.clock.Now()
	opts, e := parseExpiry(rawExp, rawTTL, now)
	if e != nil {
		writeError(w, e)
		return
	}
	entry := kv.Entry{Key: req.key, Value: value, Expiration: opts.ExpiresAt(now), Metadata: md}
	if e := refuseMetadata(req.ns.store, entry); e != nil {
		writeError(w, e)
		return
	}
	if e := s.limitWrite(req.ns.id, req.key, now); e != nil {
		writeError(w, e)
		return
	}
	if err := putEntry(r.Context(), req.ns.store, entry, opts); err != nil {
		writeError(w, storeError(err))
		return
	}
	s.wroteAt(req.ns.id, req.location, entry, true)
	writeResult(w, nil, nil)
}

func (s *Server) deleteValue(w http.ResponseWriter, r *http.Request, req request) {
	if e := s.limitWrite(req.ns.id, req.key, s.clock.Now()); e != nil {
		writeError(w, e)
		return
	}
	if err := req.ns.store.Delete(r.Context(), req.key); err != nil {
		writeError(w, storeError(err))
		return
	}
	s.wroteAt(req.ns.id, req.location, kv.Entry{Key: req.key}, false)
	writeResult(w, nil, nil)
}

func (s *Server) limitWrite(ns, key string, now time.Time) *apiError {
	if !s.faults.rateLimited() {
		return nil
	}
	if ok, wait := s.limiter.allow(ns, key, now); !ok {
		e := errorf(http.StatusTooManyRequests, CodeTooManyWrites, "too many requests: a key can be written once a second")
		e.retryAfter = wait
		return e
	}
	return nil
}

// putEntry writes one value: a plain Put when it has no metadata, so that
// a TTL stays relative to the store's own clock, else through the metadata
// ability.
func putEntry(ctx context.Context, store kv.Store, e kv.Entry, opts kv.PutOptions) error {
	if e.Metadata == nil {
		return store.Put(ctx, e.Key, e.Value, opts)
	}
	return kv.PutEntry(ctx, store, e)
}

// parseExpiry applies the API's expiration rules: expiration_ttl wins over
// expiration when both are given, and either must be at least 60 s away.
func parseExpiry(rawExp, rawTTL string, now time.Time) (kv.PutOptions, *apiError) {
	// The messages are Workers KV's own (wrangler prints them to its user),
	// quoting the value given as the API does.
	if rawTTL != "" {
		ttl, ok := wholeNumber(rawTTL)
		if !ok || ttl <= 0 {
			return kv.PutOptions{}, errorf(http.StatusBadRequest, CodeExpirationTTL, "Invalid expiration_ttl of %s. Please specify integer greater than 0.", quoted(rawTTL))
		}
		if ttl < minExpirySecs {
			return kv.PutOptions{}, errorf(http.StatusBadRequest, CodeExpirationTTL, "Invalid expiration_ttl of %d. Expiration TTL must be at least %d.", ttl, minExpirySecs)
		}
		if ttl > int64(kv.MaxTTL/time.Second) {
			return kv.PutOptions{}, errorf(http.StatusBadRequest, CodeExpirationTTL, "Invalid expiration_ttl of %d. Expiration TTL must be at most %d.", ttl, int64(kv.MaxTTL/time.Second))
		}
		return kv.PutOptions{TTL: time.Duration(ttl) * time.Second}, nil
	}
	if rawExp != "" {
		exp, ok := wholeNumber(rawExp)
		if !ok || exp <= now.Unix() {
			return kv.PutOptions{}, errorf(http.StatusBadRequest, CodeExpiration, "Invalid expiration of %s. Please specify integer greater than the current number of seconds since the UNIX epoch.", quoted(rawExp))
		}
		at := time.Unix(exp, 0)
		if at.Sub(now) < minExpirySecs*time.Second {
			return kv.PutOptions{}, errorf(http.StatusBadRequest, CodeExpiration, "Invalid expiration of %d. Expiration times must be at least %d seconds in the future.", exp, minExpirySecs)
		}
		if at.Sub(now) > kv.MaxTTL {
			return kv.PutOptions{}, errorf(http.StatusBadRequest, CodeExpiration, "Invalid expiration of %d. Expiration times must be at most %d seconds in the future.", exp, int64(kv.MaxTTL/time.Second))
		}
		return kv.PutOptions{Expiration: at}, nil
	}
	return kv.PutOptions{}, nil
}

// quoted is a caller's parameter as an error message quotes it: at most 32
// bytes of it, so that an answer never echoes a long input.
func quoted(s string) string {
	const most = 32
	if len(s) > most {
		s = strings.ToValidUTF8(s[:most], "") + "..."
	}
	return s
}

// wholeNumber parses an integer, also written as a float ("1.7e9", "60.0"),
// as JSON numbers and the SDK's float parameters are.
func wholeNumber(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}
