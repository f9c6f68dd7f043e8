package kvapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/kvshadow/kvshadow/kv"
)

// MaxBulkGetValues bounds the values and metadata one bulk/get may return
// (413 past it). The answer is encoded as it is written, so that what it
// holds is its values, not their encoding (up to six times their size).
const MaxBulkGetValues = 25 << 20

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
	keys, e := s.checkBulkGet(&body)
	if e != nil {
		writeError(w, e)
		return
	}
	// The values read are charged before they are: as many as an answer
	// may hold. Once they are known, the answer's encoded size is added.
	if err := req.hold.Grow(MaxBulkGetValues); err != nil {
		writeError(w, storeError(err))
		return
	}
	found, err := s.readMany(r, req, keys)
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	if e := checkBulkValues(found, body); e != nil {
		writeError(w, e)
		return
	}
	// What the answer holds is the values, already charged, and the
	// buffer it is encoded through.
	if err := req.hold.Grow(bulkAnswerBuffer); err != nil {
		writeError(w, storeError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, bulkAnswerBuffer)
	_, _ = bw.WriteString(`{"success":true,"errors":[],"messages":[],"result":{"values":`)
	writeBulkValues(bw, keys, found, body)
	_, _ = bw.WriteString(`}}`)
	_ = bw.Flush()
}

func (s *Server) checkBulkGet(body *bulkGetBody) ([]string, *apiError) {
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
	keys, e := s.keyList(body.Keys)
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

const bulkAnswerBuffer = 64 << 10

// checkBulkValues refuses with 413 when the values and metadata found pass
// MaxBulkGetValues together, and with 400 a json answer of a value that is
// not JSON, before anything is written.
func checkBulkValues(found map[string]kv.Entry, body bulkGetBody) *apiError {
	total := 0
	for _, e := range found {
		total += len(e.Value) + len(e.Metadata)
	}
	if total > MaxBulkGetValues {
		return errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "payload too large: the values requested exceed %d bytes together; ask for fewer keys", MaxBulkGetValues)
	}
	if body.Type == "json" {
		for _, e := range found {
			if !json.Valid(e.Value) {
				return errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: at least one of the requested keys holds a value that is not JSON")
			}
		}
	}
	return nil
}

// writeBulkValues writes the "values" object, its keys in byte order,
// encoding as it writes (see MaxBulkGetValues).
func writeBulkValues(w *bufio.Writer, keys []string, found map[string]kv.Entry, body bulkGetBody) {
	keys = slices.Sorted(slices.Values(keys))
	var num [24]byte
	_ = w.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			_ = w.WriteByte(',')
		}
		writeJSONString(w, []byte(k))
		_ = w.WriteByte(':')
		e, ok := found[k]
		switch {
		case !ok:
			_, _ = w.WriteString("null")
			continue
		case body.WithMetadata:
			_, _ = w.WriteString(`{"value":`)
		}
		if body.Type == "json" {
			_, _ = w.Write(e.Value) // valid JSON, as it is
		} else {
			writeJSONString(w, e.Value)
		}
		if body.WithMetadata {
			_, _ = w.WriteString(`,"metadata":`)
			_, _ = w.Write(metadataOrNull(e.Metadata))
			if !e.Expiration.IsZero() {
				_, _ = w.WriteString(`,"expiration":`)
				_, _ = w.Write(strconv.AppendInt(num[:0], e.Expiration.Unix(), 10))
			}
			_ = w.WriteByte('}')
		}
	}
	_ = w.WriteByte('}')
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

func writeJSONString(w *bufio.Writer, s []byte) {
	_ = w.WriteByte('"')
	jsonPieces(s, func(plain []byte, esc string) {
		_, _ = w.Write(plain)
		_, _ = w.WriteString(esc)
	})
	_ = w.WriteByte('"')
}

// jsonPieces calls emit with s's content in a JSON string, in order: each
// run of bytes that stand for themselves, then the escape that ends it
// ("" at the end).
func jsonPieces(s []byte, emit func(plain []byte, esc string)) {
	start := 0
	for i := 0; i < len(s); {
		esc, n := jsonPiece(s[i:])
		if esc != "" {
			emit(s[start:i], esc)
			start = i + n
		}
		i += n
	}
	if start < len(s) {
		emit(s[start:], "")
	}
}

// readMany reads keys in one store call when it can; reads from an edge
// location go through its cache one key at a time.
func (s *Server) readMany(r *http.Request, req request, keys []string) (map[string]kv.Entry, error) {
	if bg, ok := req.ns.store.(kv.BulkGetter); ok && (req.location == "" || s.faults.consistencyWindow() <= 0) {
		return getMany(r.Context(), bg, keys)
	}
	found := make(map[string]kv.Entry, len(keys))
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

func getMany(ctx context.Context, bg kv.BulkGetter, keys []string) (map[string]kv.Entry, error) {
	entries, err := bg.GetMany(ctx, keys)
	if err != nil {
		return nil, err
	}
	found := make(map[string]kv.Entry, len(entries))
	for _, e := range entries {
		found[e.Key] = e
	}
	return found, nil
}
