package kvapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/kvshadow/kvshadow/kv"
)

// MaxBulkGetValues bounds what one bulk/get may return: the values and
// metadata of its keys together, 25 MiB, the limit of Cloudflare's own
// simulator. The response is built under it and refused with 413 past it,
// so it never holds more than about six times that (JSON escaping).
const MaxBulkGetValues = 25 << 20

// bulkGetBody is the request of bulk/get.
type bulkGetBody struct {
	Keys         []bodyKey `json:"keys"`
	Type         string    `json:"type"`
	WithMetadata bool      `json:"withMetadata"`
}

// bulkValue is one value of bulk/get withMetadata.
type bulkValue struct {
	Value      any             `json:"value"`
	Metadata   json.RawMessage `json:"metadata"`
	Expiration int64           `json:"expiration,omitempty"`
}

func (s *Server) bulkGet(w http.ResponseWriter, r *http.Request, req request) {
	var body bulkGetBody
	if e := decodeObject(r, &body); e != nil {
		writeError(w, e)
		return
	}
	keys, e := checkBulkGet(&body)
	if e != nil {
		writeError(w, e)
		return
	}
	found, err := s.readMany(r, req, keys)
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	values, e := bulkValues(keys, found, body)
	if e != nil {
		writeError(w, e)
		return
	}
	writeRawResult(w, append(append([]byte(`{"values":`), values...), '}'))
}

// checkBulkGet applies the request's rules: type text or json, 1..100
// keys, each legal and named once.
func checkBulkGet(body *bulkGetBody) ([]string, *apiError) {
	switch {
	case body.Type == "":
		body.Type = "text"
	case body.Type != "text" && body.Type != "json":
		return nil, errorf(http.StatusBadRequest, CodeInvalidRequest, `invalid request: type must be "text" or "json"`)
	}
	switch {
	case len(body.Keys) == 0:
		return nil, errorf(http.StatusBadRequest, CodeInvalidRequest, "You must request a minimum of 1 key")
	case len(body.Keys) > MaxBulkGet:
		return nil, errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: %d keys, a bulk get takes at most %d", len(body.Keys), MaxBulkGet)
	}
	keys, e := keyList(body.Keys)
	if e != nil {
		return nil, e
	}
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if seen[k] {
			return nil, errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: a key is requested twice")
		}
		seen[k] = true
	}
	return keys, nil
}

// bulkValues builds the "values" object, its keys in byte order, refusing
// with 413 once the values and metadata pass MaxBulkGetValues.
func bulkValues(keys []string, found map[string]kv.Entry, body bulkGetBody) (json.RawMessage, *apiError) {
	keys = slices.Sorted(slices.Values(keys))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	total := 0
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		_ = enc.Encode(k)
		buf.Truncate(buf.Len() - 1) // Encode's newline
		buf.WriteByte(':')
		e, ok := found[k]
		if !ok {
			buf.WriteString("null")
			continue
		}
		if total += len(e.Value) + len(e.Metadata); total > MaxBulkGetValues {
			return nil, errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "payload too large: the values requested exceed %d bytes together; ask for fewer keys", MaxBulkGetValues)
		}
		var v any = string(e.Value) // text: invalid UTF-8 becomes U+FFFD, as in Workers KV
		if body.Type == "json" {
			if !json.Valid(e.Value) {
				return nil, errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: at least one of the requested keys holds a value that is not JSON")
			}
			v = json.RawMessage(e.Value)
		}
		if body.WithMetadata {
			bv := bulkValue{Value: v, Metadata: e.Metadata}
			if !e.Expiration.IsZero() {
				bv.Expiration = e.Expiration.Unix()
			}
			v = bv
		}
		if err := enc.Encode(v); err != nil {
			return nil, errorf(http.StatusInternalServerError, CodeUnavailable, "service temporarily unavailable")
		}
		buf.Truncate(buf.Len() - 1)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// readMany reads keys in one store call when it can; reads from an edge
// location go through its cache one key at a time.
func (s *Server) readMany(r *http.Request, req request, keys []string) (map[string]kv.Entry, error) {
	found := make(map[string]kv.Entry, len(keys))
	bg, bulk := req.ns.store.(kv.BulkGetter)
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
		e, err := s.readAt(r.Context(), req.ns.id, req.ns.store, req.location, k)
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
