package cfkv

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	cf "github.com/cloudflare/cloudflare-go/v6/kv"
	"github.com/cloudflare/cloudflare-go/v6/option"

	"github.com/kvshadow/kvshadow/kv"
)

// minAPILimit is the smallest limit the keys endpoint accepts.
const minAPILimit = 10

// List implements kv.Store with one request per call. The contract allows
// limits from 1, the API from 10, so List asks for at least 10 keys and
// returns the first limit of them; its cursor then holds the API's cursor
// for that same page, the last key returned and how many keys of the page
// were returned (the offset). The next call fetches the page again, asking
// for offset+limit keys so that the page still holds limit new ones, and
// skips the keys up to the last one returned. Skipping by key rather than
// by count keeps the cursor right while keys are added or deleted before it.
// An empty page with a cursor is not the end (the package doc).
func (s *Store) List(ctx context.Context, opts kv.ListOptions) (kv.ListResult, error) {
	limit, err := kv.ValidateListOptions(opts)
	if err != nil {
		return kv.ListResult{}, err
	}
	pos, err := decodeCursor(opts.Cursor, opts.Prefix)
	if err != nil {
		return kv.ListResult{}, err
	}
	var params cf.NamespaceKeyListParams
	params.AccountID.Value = s.cfg.AccountID
	params.Limit.Value, params.Limit.Present = float64(min(max(limit+pos.offset, minAPILimit), kv.MaxListLimit)), true
	if opts.Prefix != "" {
		params.Prefix.Value, params.Prefix.Present = opts.Prefix, true
	}
	if pos.server != "" {
		params.Cursor.Value, params.Cursor.Present = pos.server, true
	}
	var page []cf.Key
	var next string
	err = s.call(ctx, "list", func(ctx context.Context, opts ...option.RequestOption) error {
		res, err := s.api.Keys.List(ctx, s.cfg.NamespaceID, params, opts...)
		if err != nil {
			return err
		}
		page, next = res.Result, res.ResultInfo.Cursor
		return nil
	})
	if err != nil {
		return kv.ListResult{}, err
	}
	return pos.take(page, next, limit, opts.Prefix)
}

// listPosition is where a listing stands: the API cursor of the page being
// read, the last key returned (empty at the start) and how many keys of
// that page were returned.
type listPosition struct {
	server string
	last   string
	offset int
}

// take returns up to limit keys of page that follow pos.last, with the
// position after them.
func (pos listPosition) take(page []cf.Key, next string, limit int, prefix string) (kv.ListResult, error) {
	res := kv.ListResult{Keys: []string{}, Info: []kv.KeyInfo{}}
	i := 0
	for i < len(page) && pos.last != "" && page[i].Name <= pos.last {
		i++ // returned by an earlier call
	}
	skipped := i
	for ; i < len(page) && len(res.Keys) < limit; i++ {
		k := page[i].Name
		if !strings.HasPrefix(k, prefix) || (len(res.Keys) > 0 && k <= res.Keys[len(res.Keys)-1]) {
			return kv.ListResult{}, &APIError{Op: "list", Status: 200, Message: "the API listed keys out of order or outside the prefix"}
		}
		res.Keys = append(res.Keys, k)
		var info kv.KeyInfo
		if exp := page[i].Expiration; exp > 0 {
			info.Expiration = time.Unix(int64(exp), 0)
		}
		// Raw, as the API sent it: the SDK's Metadata is an interface{}.
		if raw := page[i].JSON.Metadata.Raw(); raw != "" {
			info.Metadata = kv.NormalizeMetadata(json.RawMessage(raw))
		}
		res.Info = append(res.Info, info)
	}
	last := pos.last
	if n := len(res.Keys); n > 0 {
		last = res.Keys[n-1]
	}
	switch {
	case i < len(page): // this page has more: read it again next time
		res.Cursor = encodeCursor(prefix, listPosition{server: pos.server, last: last, offset: skipped + len(res.Keys)})
	case next != "":
		res.Cursor = encodeCursor(prefix, listPosition{server: next, last: last})
	default:
		res.Done = true
	}
	return res, nil
}

// A cursor is "c1." + base64url of: uvarint length and bytes of the prefix,
// uvarint length and bytes of the last key, uvarint offset, then the API's
// cursor. Lengths rather than separators, because keys may hold any byte,
// NUL included.
const cursorTag = "c1."

func encodeCursor(prefix string, pos listPosition) string {
	b := make([]byte, 0, 2*binary.MaxVarintLen64+len(prefix)+len(pos.last)+len(pos.server))
	b = binary.AppendUvarint(b, uint64(len(prefix)))
	b = append(b, prefix...)
	b = binary.AppendUvarint(b, uint64(len(pos.last)))
	b = append(b, pos.last...)
	b = binary.AppendUvarint(b, uint64(pos.offset))
	b = append(b, pos.server...)
	return cursorTag + base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor opens a cursor made by encodeCursor for the same prefix. The
// API's cursor inside is the API's to judge: a forged one is refused there,
// also as kv.ErrInvalidCursor.
func decodeCursor(cursor, prefix string) (listPosition, error) {
	if cursor == "" {
		return listPosition{}, nil
	}
	enc, ok := strings.CutPrefix(cursor, cursorTag)
	if !ok {
		return listPosition{}, fmt.Errorf("%w: not issued by a Workers KV store", kv.ErrInvalidCursor)
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return listPosition{}, fmt.Errorf("%w: malformed", kv.ErrInvalidCursor)
	}
	gotPrefix, b, ok := readString(b)
	if !ok {
		return listPosition{}, fmt.Errorf("%w: malformed", kv.ErrInvalidCursor)
	}
	last, b, ok := readString(b)
	offset, w := binary.Uvarint(b)
	switch {
	case !ok || w <= 0 || offset >= kv.MaxListLimit:
		return listPosition{}, fmt.Errorf("%w: malformed", kv.ErrInvalidCursor)
	case gotPrefix != prefix:
		return listPosition{}, fmt.Errorf("%w: issued for another prefix", kv.ErrInvalidCursor)
	case last != "" && (kv.ValidateKey(last) != nil || !strings.HasPrefix(last, prefix)):
		return listPosition{}, fmt.Errorf("%w: malformed", kv.ErrInvalidCursor)
	case len(b) == w && last == "":
		return listPosition{}, fmt.Errorf("%w: malformed", kv.ErrInvalidCursor)
	}
	return listPosition{server: string(b[w:]), last: last, offset: int(offset)}, nil
}

func readString(b []byte) (string, []byte, bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return "", nil, false
	}
	return string(b[w : w+int(n)]), b[w+int(n):], true
}
