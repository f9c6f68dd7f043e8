package keep

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// Config configures a Store. The zero value keeps for DefaultKeepFor on the
// system clock.
type Config struct {
	// KeepFor is how long a side is kept at most; zero means
	// DefaultKeepFor.
	KeepFor time.Duration
	// Clock is the time of KeptAt and Until; nil means the system clock.
	Clock clock.Clock
}

func (c Config) keepFor() time.Duration {
	if c.KeepFor <= 0 {
		return DefaultKeepFor
	}
	return c.KeepFor
}

// MemoryStore is a Store in memory: for tests and the demo, whose shadow
// is in memory too.
type MemoryStore struct {
	cfg   Config
	clock clock.Clock
	mu    sync.Mutex
	kept  map[string]Value
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore(cfg Config) *MemoryStore {
	return &MemoryStore{cfg: cfg, clock: clock.OrReal(cfg.Clock), kept: map[string]Value{}}
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
		}
	}
	m.kept[v.Ref] = v
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
	return nil
}
