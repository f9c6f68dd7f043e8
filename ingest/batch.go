package ingest

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// Copy is one write the primary already acknowledged.
type Copy struct {
	Key string
	// Deleted makes the copy a delete; Value, Expiration and Metadata are
	// then empty.
	Deleted bool
	Value   []byte
	// Expiration is the absolute expiry the binding was given; zero means
	// none. It may already be past when the copy arrives.
	Expiration time.Time
	// Metadata is the key's Workers KV metadata as JSON; nil means none.
	Metadata json.RawMessage
	// AckedAt is when the binding acknowledged the write.
	AckedAt time.Time
	// Generation is the generation of the stage the tee routed the write
	// on (the stage answer's), so that a copy routed before a flip is known
	// as such whenever it arrives; 0 when the tee knew none.
	Generation uint64
}

// Read is what a tee read from the primary, without the value.
type Read struct {
	Key   string
	Found bool
	// SHA256 and Length describe the value read, when Found.
	SHA256     [32]byte
	Length     int
	Expiration time.Time
	ReadAt     time.Time
}

// Batch is one request of a tee.
type Batch struct {
	// Namespace is the namespace ID the tee named; empty when it named
	// none (the handler then uses Config.DefaultNamespace).
	Namespace string
	Copies    []Copy
	Reads     []Read
}

// The wire types: strict JSON, unknown fields refused.
type wireBatch struct {
	Namespace string     `json:"namespace"`
	Copies    []wireCopy `json:"copies"`
	Reads     []wireRead `json:"reads"`
}

type wireCopy struct {
	Key        *wireKey        `json:"key"`
	Deleted    bool            `json:"deleted"`
	Value      *string         `json:"value"`
	Expiration int64           `json:"expiration"`
	Metadata   json.RawMessage `json:"metadata"`
	AckedAt    int64           `json:"acked_at"`
	Generation int64           `json:"generation"`
}

type wireRead struct {
	Key        *wireKey `json:"key"`
	Found      bool     `json:"found"`
	SHA256     string   `json:"sha256"`
	Length     int      `json:"length"`
	Expiration int64    `json:"expiration"`
	ReadAt     int64    `json:"read_at"`
}

// clockSkew is how far in the future a tee's clock may put an
// acknowledgement or a read: Workers' clocks are NTP-synchronised, so more
// than this is a bug or a forgery.
const clockSkew = 5 * time.Minute

// Decode reads one batch from r, of at most limits.MaxBodyBytes, and
// checks it whole at now. Its errors match ErrInvalidBatch or ErrTooLarge
// and never quote keys or values.
func Decode(r io.Reader, limits Config, now time.Time) (Batch, error) {
	limits = limits.withDefaults()
	lr := &io.LimitedReader{R: r, N: limits.MaxBodyBytes + 1}
	dec := json.NewDecoder(lr)
	dec.DisallowUnknownFields()
	var w wireBatch
	if err := dec.Decode(&w); err != nil {
		if lr.N <= 0 {
			return Batch{}, fmt.Errorf("%w: the body is over %d bytes", ErrTooLarge, limits.MaxBodyBytes)
		}
		return Batch{}, fmt.Errorf("%w: the body is not a batch: %s", ErrInvalidBatch, jsonProblem(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if lr.N <= 0 {
			return Batch{}, fmt.Errorf("%w: the body is over %d bytes", ErrTooLarge, limits.MaxBodyBytes)
		}
		return Batch{}, fmt.Errorf("%w: data after the batch", ErrInvalidBatch)
	}
	return w.check(limits, now)
}

// jsonProblem says what was wrong without quoting the input.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("malformed JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("field %q has the wrong type", te.Field)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the body ends early"
	}
	return "unknown field or malformed JSON"
}

func (w wireBatch) check(limits Config, now time.Time) (Batch, error) {
	if w.Namespace != "" && !kv.IsID(w.Namespace) {
		return Batch{}, fmt.Errorf("%w: namespace must match %s", ErrInvalidBatch, kv.IDForm)
	}
	if len(w.Copies) > limits.MaxCopies {
		return Batch{}, fmt.Errorf("%w: %d copies, a batch holds at most %d", ErrTooLarge, len(w.Copies), limits.MaxCopies)
	}
	if len(w.Reads) > limits.MaxReads {
		return Batch{}, fmt.Errorf("%w: %d reads, a batch holds at most %d", ErrTooLarge, len(w.Reads), limits.MaxReads)
	}
	b := Batch{Namespace: w.Namespace, Copies: make([]Copy, 0, len(w.Copies)), Reads: make([]Read, 0, len(w.Reads))}
	for i, wc := range w.Copies {
		c, err := wc.check(now)
		if err != nil {
			return Batch{}, fmt.Errorf("copy %d: %w", i, err)
		}
		b.Copies = append(b.Copies, c)
	}
	for i, wr := range w.Reads {
		r, err := wr.check(now)
		if err != nil {
			return Batch{}, fmt.Errorf("read %d: %w", i, err)
		}
		b.Reads = append(b.Reads, r)
	}
	return b, nil
}

func keyAt(key *wireKey, field string, ms int64, now time.Time) (string, time.Time, error) {
	if key == nil {
		return "", time.Time{}, fmt.Errorf("%w: key is required", ErrInvalidBatch)
	}
	if key.invalid {
		return "", time.Time{}, fmt.Errorf("%w: %w: %w (it would become U+FFFD and collide with other keys)", ErrInvalidBatch, kv.ErrInvalidKey, ErrKeyEncoding)
	}
	if err := kv.ValidateKey(key.s); err != nil {
		return "", time.Time{}, fmt.Errorf("%w: %w", ErrInvalidBatch, err)
	}
	if strings.HasPrefix(key.s, kv.ReservedPrefix) { // no tee sends one (tee.js leaves them out): a forgery
		return "", time.Time{}, fmt.Errorf("%w: %w", ErrInvalidBatch, kv.ErrReservedKey)
	}
	at, err := stamp(field, ms, now)
	return key.s, at, err
}

// wireKey is a key as the batch spells it, its raw text checked for what
// encoding/json would turn into U+FFFD (see invalid_key in the package doc).
type wireKey struct {
	s       string
	invalid bool
}

func (k *wireKey) UnmarshalJSON(raw []byte) error {
	s, valid, err := kv.UnquoteKey(raw)
	k.s, k.invalid = s, !valid
	return err
}

func (wc wireCopy) check(now time.Time) (Copy, error) {
	key, acked, err := keyAt(wc.Key, "acked_at", wc.AckedAt, now)
	if err != nil {
		return Copy{}, err
	}
	c := Copy{Key: key, Deleted: wc.Deleted, AckedAt: acked}
	if wc.Generation < 0 {
		return Copy{}, fmt.Errorf("%w: generation is a stage generation, never negative", ErrInvalidBatch)
	}
	c.Generation = uint64(wc.Generation)
	if wc.Deleted {
		if wc.Value != nil || wc.Expiration != 0 || len(wc.Metadata) > 0 {
			return Copy{}, fmt.Errorf("%w: a delete carries no value, expiration or metadata", ErrInvalidBatch)
		}
		return c, nil
	}
	if wc.Value == nil {
		return Copy{}, fmt.Errorf("%w: value is required unless deleted", ErrInvalidBatch)
	}
	if base64.StdEncoding.DecodedLen(len(*wc.Value)) > kv.MaxValueSize+3 {
		return Copy{}, fmt.Errorf("%w: a value holds at most %d bytes", ErrTooLarge, kv.MaxValueSize)
	}
	if c.Value, err = base64.StdEncoding.DecodeString(*wc.Value); err != nil {
		return Copy{}, fmt.Errorf("%w: value is not base64", ErrInvalidBatch)
	}
	if len(c.Value) > kv.MaxValueSize {
		return Copy{}, fmt.Errorf("%w: a value holds at most %d bytes", ErrTooLarge, kv.MaxValueSize)
	}
	if c.Expiration, err = expiry(wc.Expiration, now); err != nil {
		return Copy{}, err
	}
	if len(wc.Metadata) > 0 && !bytes.Equal(wc.Metadata, []byte("null")) {
		if err := kv.ValidateMetadata(wc.Metadata); err != nil {
			return Copy{}, fmt.Errorf("%w: %w", ErrInvalidBatch, err)
		}
		c.Metadata = bytes.Clone(wc.Metadata)
	}
	return c, nil
}

func (wr wireRead) check(now time.Time) (Read, error) {
	key, at, err := keyAt(wr.Key, "read_at", wr.ReadAt, now)
	if err != nil {
		return Read{}, err
	}
	r := Read{Key: key, Found: wr.Found, ReadAt: at}
	if !wr.Found {
		if wr.SHA256 != "" || wr.Length != 0 || wr.Expiration != 0 {
			return Read{}, fmt.Errorf("%w: a read that found nothing carries no digest, length or expiration", ErrInvalidBatch)
		}
		return r, nil
	}
	if len(wr.SHA256) != 64 {
		return Read{}, fmt.Errorf("%w: sha256 must be 64 hex digits", ErrInvalidBatch)
	}
	if _, err := hex.Decode(r.SHA256[:], []byte(wr.SHA256)); err != nil {
		return Read{}, fmt.Errorf("%w: sha256 must be 64 hex digits", ErrInvalidBatch)
	}
	if wr.Length < 0 || wr.Length > kv.MaxValueSize {
		return Read{}, fmt.Errorf("%w: length must be 0..%d", ErrInvalidBatch, kv.MaxValueSize)
	}
	r.Length = wr.Length
	if r.Expiration, err = expiry(wr.Expiration, now); err != nil {
		return Read{}, err
	}
	return r, nil
}

// stamp reads a required time in milliseconds, not in the future beyond
// clockSkew.
func stamp(field string, ms int64, now time.Time) (time.Time, error) {
	if ms <= 0 {
		return time.Time{}, fmt.Errorf("%w: %s is required (milliseconds since the epoch)", ErrInvalidBatch, field)
	}
	t := time.UnixMilli(ms)
	if t.After(now.Add(clockSkew)) {
		return time.Time{}, fmt.Errorf("%w: %s is in the future", ErrInvalidBatch, field)
	}
	return t, nil
}

// expiry reads an optional absolute expiry in seconds; it may be past, but
// not beyond the contract's longest TTL.
func expiry(sec int64, now time.Time) (time.Time, error) {
	switch {
	case sec == 0:
		return time.Time{}, nil
	case sec < 0:
		return time.Time{}, fmt.Errorf("%w: expiration must be seconds since the epoch", ErrInvalidBatch)
	case sec > now.Add(kv.MaxTTL).Unix():
		return time.Time{}, fmt.Errorf("%w: expiration is too far in the future", ErrInvalidBatch)
	}
	return time.Unix(sec, 0), nil
}
