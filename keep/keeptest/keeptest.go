// Package keeptest is the conformance suite of keep.Store: keep's tests run
// it on MemoryStore, tests/proxy on MongoStore over an embedded FerretDB
// (and any MongoDB at MONGODB_URI).
package keeptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/keep"
)

// Run checks Stores made by open with the Config it gives: a side reads
// back as kept (value, expiry, metadata, a deletion, a value larger than
// keep.PartSize when large is set), with the fingerprint of the side that
// stood; it goes at KeepFor or at its own expiry, whichever comes first, and
// when discarded; a side already expired is not kept; past MaxKept or
// MaxKeptBytes the oldest go, never the newest.
func Run(t *testing.T, large bool, open func(keep.Config) keep.Store) {
	t.Run("kept", func(t *testing.T) { kept(t, large, open) })
	t.Run("bounds", func(t *testing.T) { bounds(t, open) })
	t.Run("rate", func(t *testing.T) { rate(t, open) })
}

// rate: past Config.Rate sides a minute (a side counting once more per
// MiB of its value), Keep refuses with ErrRate until the minute has room.
func rate(t *testing.T, open func(keep.Config) keep.Store) {
	ctx := context.Background()
	clk := newClock()
	s := open(keep.Config{Rate: 4, Clock: clk})
	keepOf := func(size int) error {
		_, err := s.Keep(ctx, dualwrite.Kept{Key: "wordle:k", Displaced: compare.Observation{Found: true, Value: bytes.Repeat([]byte("x"), size)}})
		return err
	}
	for i := range 4 {
		if err := keepOf(10); err != nil {
			t.Fatalf("side %d within the rate: %v", i, err)
		}
	}
	if err := keepOf(10); !errors.Is(err, keep.ErrRate) {
		t.Fatalf("a fifth side in the minute: %v, want ErrRate", err)
	}
	clk.Advance(30 * time.Second)
	for i := range 2 {
		if err := keepOf(10); err != nil {
			t.Fatalf("side %d half a minute later: %v", i, err)
		}
	}
	if err := keepOf(1 << 20); !errors.Is(err, keep.ErrRate) {
		t.Fatalf("a side of 1 MiB (2 of the rate) with none left: %v, want ErrRate", err)
	}
	clk.Advance(time.Minute)
	if err := keepOf(1 << 20); err != nil {
		t.Fatalf("a side of 1 MiB a minute later: %v", err)
	}
}

// keepFor is the Config.KeepFor of Run's stores.
const keepFor = time.Hour

// newClock is a fake clock at a whole second of now, as MongoDB keeps times
// to the millisecond.
func newClock() *clock.Fake { return clock.NewFake(time.Now().Truncate(time.Second)) }

func kept(t *testing.T, large bool, open func(keep.Config) keep.Store) {
	ctx := context.Background()
	clk := newClock()
	s := open(keep.Config{KeepFor: keepFor, Clock: clk})
	standing := compare.Observation{Found: true, Value: []byte("through-b"), Metadata: json.RawMessage(`{"by": "b"}`)}
	kept := func(d compare.Observation) string {
		t.Helper()
		ref, err := s.Keep(ctx, dualwrite.Kept{Key: "wordle:k", Displaced: d, Standing: standing})
		if err != nil || ref == "" {
			t.Fatalf("Keep: %q, %v", ref, err)
		}
		return ref
	}
	load := func(ref string) keep.Value {
		t.Helper()
		v, err := s.Load(ctx, ref)
		if err != nil {
			t.Fatalf("Load(%s): %v", ref, err)
		}
		return v
	}
	gone := func(ref, when string) {
		t.Helper()
		if _, err := s.Load(ctx, ref); !errors.Is(err, keep.ErrGone) {
			t.Fatalf("Load %s: %v, want ErrGone", when, err)
		}
	}
	now := clk.Now()
	exp := now.Add(30 * time.Minute).Truncate(time.Second)
	plain := kept(compare.Observation{Found: true, Value: []byte("binding"), Expiration: exp, Metadata: json.RawMessage(`{"a":1}`)})
	v := load(plain)
	if v.Key != "wordle:k" || !v.Found || string(v.Entry.Value) != "binding" || !v.Entry.Expiration.Equal(exp) || string(v.Entry.Metadata) != `{"a":1}` {
		t.Fatalf("the side read back: %+v", v)
	}
	if v.Standing != keep.FingerprintOf(compare.Observation{Found: true, Value: []byte("through-b"), Metadata: []byte(`{"by":"b"}`)}) || !v.Until.Equal(exp) {
		t.Fatalf("standing %+v, until %v (want the value's expiry %v)", v.Standing, v.Until, exp)
	}
	deleted := kept(compare.Observation{})
	if v := load(deleted); v.Found || v.Key != "wordle:k" || !v.Until.Equal(now.Add(keepFor)) {
		t.Fatalf("a deletion read back: %+v", v)
	}
	empty := kept(compare.Observation{Found: true, Value: []byte{}})
	if v := load(empty); !v.Found || len(v.Entry.Value) != 0 || v.Entry.Metadata != nil {
		t.Fatalf("an empty value read back: %+v", v)
	}
	if large {
		big := bytes.Repeat([]byte("0123456789abcdef"), (keep.PartSize*5/2)/16)
		ref := kept(compare.Observation{Found: true, Value: big})
		if v := load(ref); !bytes.Equal(v.Entry.Value, big) {
			t.Fatalf("a value of %d bytes read back as %d", len(big), len(v.Entry.Value))
		}
		if err := s.Discard(ctx, ref); err != nil {
			t.Fatal(err)
		}
		gone(ref, "after Discard")
	}
	if err := s.Discard(ctx, deleted); err != nil {
		t.Fatal(err)
	}
	gone(deleted, "after Discard")
	if err := s.Discard(ctx, deleted); err != nil {
		t.Fatalf("Discard twice: %v", err)
	}
	if _, err := s.Keep(ctx, dualwrite.Kept{Key: "wordle:k", Displaced: compare.Observation{Found: true, Value: []byte("x"), Expiration: now.Add(-time.Second)}}); !errors.Is(err, keep.ErrGone) {
		t.Fatalf("Keep of an expired side: %v, want ErrGone", err)
	}
	clk.Advance(30 * time.Minute)
	gone(plain, "at the value's own expiry")
	load(empty)
	clk.Advance(30 * time.Minute)
	gone(empty, "at KeepFor")
}

func bounds(t *testing.T, open func(keep.Config) keep.Store) {
	ctx := context.Background()
	clk := newClock()
	s := open(keep.Config{MaxKept: 3, MaxKeptBytes: 100, Clock: clk})
	keepOf := func(size int) string {
		t.Helper()
		clk.Advance(time.Second) // the sides are ordered by when they were kept
		ref, err := s.Keep(ctx, dualwrite.Kept{Key: "wordle:k", Displaced: compare.Observation{Found: true, Value: bytes.Repeat([]byte("x"), size)}})
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	held := func(refs ...string) (n int) {
		for _, ref := range refs {
			if _, err := s.Load(ctx, ref); err == nil {
				n++
			}
		}
		return n
	}
	var refs []string
	for range 5 {
		refs = append(refs, keepOf(10))
	}
	if held(refs[:2]...) != 0 || held(refs[2:]...) != 3 {
		t.Fatalf("past MaxKept: %d of the oldest two and %d of the newest three held", held(refs[:2]...), held(refs[2:]...))
	}
	big := keepOf(90)
	if held(refs[2:4]...) != 0 || held(refs[4], big) != 2 {
		t.Fatalf("past MaxKeptBytes: the newest two should stand alone (100 bytes)")
	}
	huge := keepOf(500)
	if held(huge) != 1 || held(refs[4], big) != 0 {
		t.Fatal("a side larger than MaxKeptBytes alone: kept, the others gone")
	}
}
