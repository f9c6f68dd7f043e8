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
// is in memory too.
type MemoryStore struct {
	cfg   Config
	clock clock.Clock
	mu    sync.Mutex
	kept  map[string]Value
	order []string // the refs in the order kept, oldest first; Keep drops those no longer kept
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
	v.Entry.Value, v.Entry.Metadata = bytes.Clone(v.Entry.Value), bytes.Clone(v.Entry.Metadata)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kept[v.Ref] = v
	m.order = append(m.order, v.Ref)
	// Newest first, those still kept: the expired and the discarded go.
	sides := make([]sized, 0, len(m.kept))
	for _, ref := range slices.Backward(m.order) {
		if k, ok := m.kept[ref]; ok && k.Until.After(now) {
			sides = append(sides, sized{ref: ref, size: int64(len(k.Entry.Value))})
		} else {
			delete(m.kept, ref)
		}
	}
	n, b := m.cfg.bounds()
	for _, ref := range past(sides, n, b) {
		delete(m.kept, ref)
	}
	m.order = m.order[:0]
	for _, s := range slices.Backward(sides) {
		if _, ok := m.kept[s.ref]; ok {
			m.order = append(m.order, s.ref)
		}
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
	return nil
}
