package kvapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"unicode/utf8"

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
	writeRawResult(w, `{"values":`, values, `}`)
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

// bulkValues builds the "values" object, its keys in byte order. It
// refuses with 413 before encoding anything when the values and metadata
// found pass MaxBulkGetValues together, and encodes into one buffer sized
// exactly, so that the answer costs its own size and no more.
func bulkValues(keys []string, found map[string]kv.Entry, body bulkGetBody) ([]byte, *apiError) {
	total := 0
	for _, e := range found {
		total += len(e.Value) + len(e.Metadata)
	}
	if total > MaxBulkGetValues {
		return nil, errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "payload too large: the values requested exceed %d bytes together; ask for fewer keys", MaxBulkGetValues)
	}
	if body.Type == "json" {
		for _, e := range found {
			if !json.Valid(e.Value) {
				return nil, errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: at least one of the requested keys holds a value that is not JSON")
			}
		}
	}
	keys = slices.Sorted(slices.Values(keys))
	size := 2
	for _, k := range keys {
		size += jsonStringLen([]byte(k)) + len(`,:{"value":,"metadata":,"expiration":-9223372036854775808}`)
		if e, ok := found[k]; ok {
			size += len(e.Metadata) + len(e.Value)
			if body.Type != "json" {
				size += jsonStringLen(e.Value) - len(e.Value)
			}
		}
	}
	out := make([]byte, 0, size)
	out = append(out, '{')
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendJSONString(out, []byte(k))
		out = append(out, ':')
		e, ok := found[k]
		switch {
		case !ok:
			out = append(out, "null"...)
			continue
		case body.WithMetadata:
			out = append(out, `{"value":`...)
		}
		if body.Type == "json" {
			out = append(out, e.Value...) // valid JSON, as it is
		} else {
			out = appendJSONString(out, e.Value)
		}
		if body.WithMetadata {
			out = append(out, `,"metadata":`...)
			out = append(out, metadataOrNull(e.Metadata)...)
			if !e.Expiration.IsZero() {
				out = append(out, `,"expiration":`...)
				out = strconv.AppendInt(out, e.Expiration.Unix(), 10)
			}
			out = append(out, '}')
		}
	}
	return append(out, '}'), nil
}

func metadataOrNull(md json.RawMessage) []byte {
	if md == nil {
		return []byte("null")
	}
	return md
}

// jsonEscapes holds how each ASCII byte that needs it is escaped in a JSON
// string; "" means the byte stands for itself.
var jsonEscapes = func() (t [utf8.RuneSelf]string) {
	const hex = "0123456789abcdef"
	for c := range 0x20 {
		t[c] = `\u00` + string(hex[c>>4]) + string(hex[c&0xf])
	}
	t['\n'], t['\r'], t['\t'], t['"'], t['\\'] = `\n`, `\r`, `\t`, `\"`, `\\`
	return t
}()

// jsonPiece reads the character at the start of s (not empty): its escape
// in a JSON string, "" when its bytes stand for themselves, and its length
// in s. Invalid UTF-8 becomes U+FFFD, as a text value does in Workers KV.
func jsonPiece(s []byte) (esc string, n int) {
	if s[0] < utf8.RuneSelf {
		return jsonEscapes[s[0]], 1
	}
	r, size := utf8.DecodeRune(s)
	if r == utf8.RuneError && size == 1 {
		return `\ufffd`, 1
	}
	return "", size
}

// appendJSONString appends s as a JSON string.
func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		esc, n := jsonPiece(s[i:])
		if esc != "" {
			dst = append(dst, esc...)
		} else {
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return append(dst, '"')
}

// jsonStringLen is the length of appendJSONString's output for s.
func jsonStringLen(s []byte) int {
	n := 2
	for i := 0; i < len(s); {
		esc, k := jsonPiece(s[i:])
		if esc != "" {
			n += len(esc)
		} else {
			n += k
		}
		i += k
	}
	return n
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
