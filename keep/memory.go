package keep

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
)

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
	// Clock is the time of KeptAt and Until; nil means the system clock.
	Clock clock.Clock
}

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

// MemoryStore is a Store in memory: for tests and the demo, whose shadow
// is in memory too.
type MemoryStore struct {
	cfg   Config
	clock clock.Clock
	mu    sync.Mutex
	kept  map[string]Value
	order map[string]uint64 // the order of the Keeps, newest highest
	seq   uint64
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore(cfg Config) *MemoryStore {
	return &MemoryStore{cfg: cfg, clock: clock.OrReal(cfg.Clock), kept: map[string]Value{}, order: map[string]uint64{}}
}

// Keep implements dualwrite.Keeper.
func (m *MemoryStore) Keep(ctx context.Context, k dualwrite.Kept) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("%w: %w", ErrStore, err)
	}
	now := m.clock.Now()
	v, err := valueOf(k, control.NewID(), now, m.cfg.keepFor())
	if err != nil {
		return "", err
	}
	v.Entry.Value = append([]byte(nil), v.Entry.Value...)
	v.Entry.Metadata = append([]byte(nil), v.Entry.Metadata...)
	if k.Displaced.Metadata == nil {
		v.Entry.Metadata = nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for ref, old := range m.kept {
		if !old.Until.After(now) {
			delete(m.kept, ref)
			delete(m.order, ref)
		}
	}
	m.kept[v.Ref] = v
	m.seq++
	m.order[v.Ref] = m.seq
	sides := make([]sized, 0, len(m.kept))
	for ref, k := range m.kept {
		sides = append(sides, sized{ref: ref, size: int64(len(k.Entry.Value))})
	}
	slices.SortFunc(sides, func(a, b sized) int { return cmp.Compare(m.order[b.ref], m.order[a.ref]) })
	n, b := m.cfg.bounds()
	for _, ref := range past(sides, n, b) {
		delete(m.kept, ref)
		delete(m.order, ref)
	}
	return v.Ref, nil
}

// Load implements Store.
func (m *MemoryStore) Load(ctx context.Context, ref string) (Value, error) {
	if err := ctx.Err(); err != nil {
		return Value{}, fmt.Errorf("%w: %w", ErrStore, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.kept[ref]
	if !ok || !v.Until.After(m.clock.Now()) {
		return Value{}, fmt.Errorf("%w: %q", ErrGone, ref)
	}
	return v, nil
}

// Discard implements Store.
func (m *MemoryStore) Discard(ctx context.Context, ref string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.kept, ref)
	delete(m.order, ref)
	return nil
}
