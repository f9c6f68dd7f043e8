package keep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/membudget"
)

// The errors of this package.
var (
	// ErrGone: nothing is kept under the reference: never kept (the
	// record's keep_error says why), past KeepFor or the value's own
	// expiry, or discarded by a decision.
	ErrGone = errors.New("keep: the kept side is gone")
	// ErrWrittenSince: the key no longer holds the side that stood when
	// the other was kept; restoring it would overwrite a newer write.
	ErrWrittenSince = errors.New("keep: the key was written since the conflict")
	// ErrNotServed: the record's Workers KV namespace is not served here.
	ErrNotServed = errors.New("keep: the record's namespace is not served by this instance")
	// ErrSide: a decision names neither side.
	ErrSide = errors.New(`keep: a decision keeps "copy" or "shadow"`)
	// ErrRate: more sides were kept in the last minute than Config.Rate
	// allows; this one is not kept.
	ErrRate = errors.New("keep: more sides kept this minute than the rate allows")
	// ErrStore: the kept sides could not be read or written.
	ErrStore = errors.New("keep: the store of kept sides is unavailable")
)

// DefaultKeepFor is how long a side is kept at most: long enough for an
// operator to decide before complete, short enough that a bot version that
// writes its binding long after the flip fills no database.
const DefaultKeepFor = 14 * 24 * time.Hour

// Value is a kept side as a decision reads it back.
type Value struct {
	Ref string
	// Key is the key as written; Found is false when the side is a
	// deletion, else Entry has its value, expiry and metadata.
	Key   string
	Found bool
	Entry kv.Entry
	// Standing is the fingerprint of the side the authoritative store
	// held when this one was kept.
	Standing Fingerprint
	// KeptAt is when it was kept; Until when it goes: KeptAt plus
	// KeepFor, or the value's own expiry if that comes first.
	KeptAt, Until time.Time
}

// Fingerprint identifies a side without holding it: its value, metadata
// and expiry (dualwrite.Fingerprint).
type Fingerprint = dualwrite.Fingerprint

// FingerprintOf is the fingerprint of an observation of a key.
func FingerprintOf(o compare.Observation) Fingerprint { return dualwrite.FingerprintOf(o) }

// Store keeps displaced sides: MongoStore and MemoryStore are ones.
type Store interface {
	dualwrite.Keeper
	// Load returns the side kept under ref, or an error matching ErrGone.
	Load(ctx context.Context, ref string) (Value, error)
	// Discard removes it; a ref that holds nothing is no error.
	Discard(ctx context.Context, ref string) error
}

// valueOf is what a Store keeps of k under ref at now, for at most
// keepFor; an error when there is nothing to keep.
func valueOf(k dualwrite.Kept, ref string, now time.Time, keepFor time.Duration) (Value, error) {
	if err := kv.ValidateKey(k.Key); err != nil {
		return Value{}, err
	}
	d := k.Displaced
	v := Value{Ref: ref, Key: k.Key, Found: d.Found,
		Standing: FingerprintOf(k.Standing),
		KeptAt:   now, Until: now.Add(keepFor)}
	if d.Found {
		v.Entry = kv.Entry{Key: k.Key, Value: d.Value, Expiration: d.Expiration, Metadata: d.Metadata}
		if !d.Expiration.IsZero() && d.Expiration.Before(v.Until) {
			v.Until = d.Expiration
		}
		if !v.Until.After(now) {
			return Value{}, fmt.Errorf("%w: the displaced value has expired", ErrGone)
		}
	}
	return v, nil
}

// Config configures a Store. The zero value keeps for DefaultKeepFor, at
// most DefaultMaxKept sides and DefaultMaxKeptBytes, on the system clock.
type Config struct {
	// KeepFor is how long a side is kept at most; zero means
	// DefaultKeepFor.
	KeepFor time.Duration
	// MaxKept is how many sides are kept at most, and MaxKeptBytes how
	// many bytes of their values: past either, the oldest go, though
	// never the one just kept (a bot version that still writes its
	// binding after the flip makes a conflict of every write). Zero means
	// DefaultMaxKept and DefaultMaxKeptBytes.
	MaxKept      int
	MaxKeptBytes int64
	// Rate is how many sides a minute the Store keeps at most, a side
	// counting once and once more for each whole MiB of its value: past
	// it, Keep refuses (ErrRate) until the minute has room, so that
	// copies from one client cannot push out the sides kept before. Zero
	// means DefaultRate; negative, no bound.
	Rate int
	// Memory is the process's memory budget, which a MemoryStore's kept
	// values are charged to for as long as they are kept: a side the
	// budget cannot pay for is not kept. A MemoryStore with a budget keeps
	// at most a quarter of it unless MaxKeptBytes says less.
	Memory *membudget.Budget
	// Clock is the time of KeptAt and Until; nil means the system clock.
	Clock clock.Clock
}

// DefaultRate is Config.Rate's default: a bot version that still writes
// its binding around the flip conflicts far less often; a client that
// forges copies keeps at most this many sides, or MiB, a minute.
const DefaultRate = 120

// The bounds of a Store: as many sides as the conflict ledger keeps
// records of a namespace, and enough bytes for that many values of 200 KiB.
const (
	DefaultMaxKept      = control.MaxConflictRecords
	DefaultMaxKeptBytes = 2 << 30
)

func (c Config) keepFor() time.Duration {
	if c.KeepFor <= 0 {
		return DefaultKeepFor
	}
	return c.KeepFor
}

// bounds returns MaxKept and MaxKeptBytes, defaults filled in.
func (c Config) bounds() (int, int64) {
	n, b := c.MaxKept, c.MaxKeptBytes
	if n <= 0 {
		n = DefaultMaxKept
	}
	if b <= 0 {
		b = DefaultMaxKeptBytes
	}
	return n, b
}

// sized is a kept side's reference and the bytes of its value.
type sized struct {
	ref  string
	size int64
}

// past returns the refs of sides, newest first, beyond the bounds: the
// oldest, so that the rest are at most n and b bytes, the newest always
// kept.
func past(sides []sized, n int, b int64) []string {
	var out []string
	var bytes int64
	for i, s := range sides {
		bytes += s.size
		if i > 0 && (i >= n || bytes > b) {
			out = append(out, s.ref)
		}
	}
	return out
}
