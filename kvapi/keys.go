package kvapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/kvshadow/kvshadow/kv"
)

type keyInfo struct {
	Name       string          `json:"name"`
	Expiration int64           `json:"expiration,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
}

// A server cursor is base64url of a state byte and the store's cursor, so
// that the server can hand out the empty pages of its fault mode and still
// pass the store's own cursor through untouched.
const (
	cursorNext  = 'n' // resume at the store cursor
	cursorAfter = 'e' // an empty page was served; serve the store cursor now
)

func encodeCursor(state byte, storeCursor string) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte{state}, storeCursor...))
}

func decodeCursor(c string) (state byte, storeCursor string, ok bool) {
	if c == "" {
		return cursorNext, "", true
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(raw) == 0 || (raw[0] != cursorNext && raw[0] != cursorAfter) {
		return 0, "", false
	}
	return raw[0], string(raw[1:]), true
}

// limitError is Workers KV's answer to a list limit outside 10..1000, in its
// own words where it publishes them (above the maximum).
func limitError(raw string, n int, err error) *apiError {
	switch {
	case err != nil:
		return errorf(http.StatusBadRequest, CodeInvalidLimit, "Invalid key_count_limit of %s. Please specify an integer greater than 0.", quoted(raw))
	case n > MaxListLimit:
		return errorf(http.StatusBadRequest, CodeInvalidLimit, "Invalid key_count_limit of %d. Please specify an integer less than %d.", n, MaxListLimit)
	}
	return errorf(http.StatusBadRequest, CodeInvalidLimit, "Invalid key_count_limit of %d. Please specify an integer of at least %d.", n, MinListLimit)
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request, req request) {
	q := r.URL.Query()
	limit := MaxListLimit
	if raw := q.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < MinListLimit || n > MaxListLimit {
			writeError(w, limitError(raw, n, err))
			return
		}
		limit = n
	}
	state, storeCursor, ok := decodeCursor(q.Get("cursor"))
	if !ok {
		writeError(w, errorf(http.StatusBadRequest, CodeInvalidCursor, `invalid "list keys" cursor`))
		return
	}
	prefix := q.Get("prefix")
	if len(prefix) > kv.MaxKeySize {
		writeError(w, keyTooLong(len(prefix)))
		return
	}
	if e := s.refuseReserved(prefix); e != nil {
		writeError(w, e)
		return
	}
	res, err := req.ns.store.List(r.Context(), kv.ListOptions{Prefix: prefix, Limit: limit, Cursor: storeCursor})
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	if s.faults.emptyListPages() && state != cursorAfter && !res.Done {
		writeResult(w, []keyInfo{}, &cursorInfo{Cursor: encodeCursor(cursorAfter, storeCursor)})
		return
	}
	keys, err := withDetails(r.Context(), req.ns.store, res)
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	info := &cursorInfo{Count: len(keys)}
	if !res.Done {
		info.Cursor = encodeCursor(cursorNext, res.Cursor)
	}
	writeResult(w, keys, info)
}

// withDetails pairs listed keys with their expiries and metadata, as
// Workers KV lists them: as the store listed them when it did (Workers KV
// itself: the page is one request), else read in one call when the store
// can. A key deleted since it was listed keeps its place, without either.
func withDetails(ctx context.Context, store kv.Store, res kv.ListResult) ([]keyInfo, error) {
	keys := res.Keys
	out := make([]keyInfo, len(keys))
	for i, k := range keys {
		out[i].Name = k
	}
	if len(res.Info) == len(keys) {
		for i, info := range res.Info {
			if !info.Expiration.IsZero() {
				out[i].Expiration = info.Expiration.Unix()
			}
			out[i].Metadata = info.Metadata
		}
		return out, nil
	}
	if len(keys) == 0 {
		return out, nil
	}
	found := make(map[string]kv.Entry, len(keys))
	switch st := store.(type) {
	case kv.BulkGetter:
		var err error
		if found, err = getMany(ctx, st, keys); err != nil {
			return nil, err
		}
	case kv.ExpiryGetter:
		for _, k := range keys {
			if e, err := st.GetEntry(ctx, k); err == nil {
				found[k] = e
			}
		}
	}
	for i := range out {
		e := found[out[i].Name]
		if !e.Expiration.IsZero() {
			out[i].Expiration = e.Expiration.Unix()
		}
		out[i].Metadata = e.Metadata
	}
	return out, nil
}
