package control

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemoryBoard is a Board inside one process: for a single instance that
// needs no coordination (the demo) and for tests.
type MemoryBoard struct {
	mu   sync.Mutex
	doc  Document
	beat map[string]Heartbeat
	// claims holds the time of each difference's claim (Claimer).
	claims map[[32]byte]time.Time
}

var (
	_ Board   = (*MemoryBoard)(nil)
	_ Claimer = (*MemoryBoard)(nil)
)

// NewMemoryBoard returns an empty board.
func NewMemoryBoard() *MemoryBoard { return &MemoryBoard{beat: map[string]Heartbeat{}} }

// Load implements Board.
func (b *MemoryBoard) Load(ctx context.Context) (Document, error) {
	if err := ctx.Err(); err != nil {
		return Document{}, fmt.Errorf("%w: %w", ErrBoard, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.doc, nil
}

// Swap implements Board.
func (b *MemoryBoard) Swap(ctx context.Context, expect uint64, next Document) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrBoard, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.doc.Generation != expect {
		return fmt.Errorf("%w: generation %d is no longer current: %s", ErrConflict, expect, b.doc.describe())
	}
	b.doc = next
	return nil
}

// Beat implements Board.
func (b *MemoryBoard) Beat(ctx context.Context, h Heartbeat) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrBoard, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	h.Watermarks = maps.Clone(h.Watermarks)
	b.beat[h.Instance] = h
	return nil
}

// Claim implements Claimer.
func (b *MemoryBoard) Claim(ctx context.Context, id [32]byte, instance string, at time.Time, hold time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("%w: %w", ErrBoard, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.claims[id]; ok && c.After(at.Add(-hold)) {
		return false, nil
	}
	if b.claims == nil {
		b.claims = map[[32]byte]time.Time{}
	}
	b.claims[id] = at
	return true, nil
}

// Instances implements Board, in instance order.
func (b *MemoryBoard) Instances(ctx context.Context) ([]Heartbeat, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBoard, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.SortedFunc(maps.Values(b.beat), func(a, b Heartbeat) int { return strings.Compare(a.Instance, b.Instance) }), nil
}

// Forget implements Board.
func (b *MemoryBoard) Forget(ctx context.Context, instance string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrBoard, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.beat, instance)
	return nil
}
