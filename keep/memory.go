package keep

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// MemoryStore is a Store in memory: for tests and the demo, whose shadow
// is in memory too. Its values are charged to Config.Memory while kept.
type MemoryStore struct {
	cfg   Config
	clock clock.Clock
	rate  *rate
	mu    sync.Mutex
	kept  map[string]Value
	order []string // the refs in the order kept, oldest first; Keep drops those no longer kept
	bytes int64    // what the kept values and metadata hold, charged to cfg.Memory
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore(cfg Config) *MemoryStore {
	if cfg.Memory != nil {
		if share := cfg.Memory.Limit() / 4; cfg.MaxKeptBytes <= 0 || cfg.MaxKeptBytes > share {
			cfg.MaxKeptBytes = share
		}
	}
	return &MemoryStore{cfg: cfg, clock: clock.OrReal(cfg.Clock), rate: newRate(cfg), kept: map[string]Value{}}
}

// sizeOf is what v holds in memory, as charged.
func sizeOf(v Value) int64 { return int64(len(v.Entry.Value) + len(v.Entry.Metadata)) }

// MaxKeptBytes is the most bytes of values the store keeps: Config's, or a
// quarter of its memory budget.
func (m *MemoryStore) MaxKeptBytes() int64 {
	_, b := m.cfg.bounds()
	return b
}

// Bytes is what the kept values and their metadata hold now.
func (m *MemoryStore) Bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes
}

// Keep implements dualwrite.Keeper. Past the bounds the oldest go; a side
// the memory budget cannot pay for once they have, or past the rate, is
// not kept.
func (m *MemoryStore) Keep(ctx context.Context, k dualwrite.Kept) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("%w: %w", ErrStore, err)
	}
	now := m.clock.Now()
	v, err := valueOf(k, control.NewID(), now, m.cfg.keepFor())
	if err != nil {
		return "", err
	}
	size := sizeOf(v)
	if err := m.rate.take(now, size); err != nil {
		return "", err
	}
	n, b := m.cfg.bounds()
	if m.cfg.Memory != nil && size > b {
		return "", fmt.Errorf("%w: a side of %d bytes is more than the %d of the memory budget kept sides may hold", ErrStore, size, b)
	}
	v.Entry.Value, v.Entry.Metadata = bytes.Clone(v.Entry.Value), bytes.Clone(v.Entry.Metadata)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kept[v.Ref] = v
	m.order = append(m.order, v.Ref)
	// Newest first, those still kept: the expired and the discarded go.
	sides := make([]sized, 0, len(m.kept))
	for _, ref := range slices.Backward(m.order) {
		if k, ok := m.kept[ref]; ok && k.Until.After(now) {
			sides = append(sides, sized{ref: ref, size: sizeOf(k)})
		} else {
			m.drop(ref)
		}
	}
	for _, ref := range past(sides, n, b) {
		m.drop(ref)
	}
	m.order = m.order[:0]
	for _, s := range slices.Backward(sides) {
		if _, ok := m.kept[s.ref]; ok {
			m.order = append(m.order, s.ref)
		}
	}
	if !m.cfg.Memory.TryAcquire(size) {
		delete(m.kept, v.Ref)
		m.order = m.order[:len(m.order)-1]
		return "", fmt.Errorf("%w: the memory budget cannot hold the side's %d bytes now", ErrStore, size)
	}
	m.bytes += size
	return v.Ref, nil
}

// drop removes the side ref, if kept, and gives its bytes back: every
// side but the one Keep is adding was charged. Under mu.
func (m *MemoryStore) drop(ref string) {
	v, ok := m.kept[ref]
	if !ok {
		return
	}
	delete(m.kept, ref)
	size := sizeOf(v)
	m.bytes -= size
	m.cfg.Memory.Release(size)
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
	m.drop(ref)
	return nil
}
