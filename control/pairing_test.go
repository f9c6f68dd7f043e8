package control

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// The pairing's rules on one board: a document written before pairings
// gets the first joining instance's, one generation on, which a change of
// stage carries; another pairing is refused, naming both, unless
// NewPairing; a part of the pairing passes; a first start past shadow on
// an empty board is refused unless NewPairing; a start in live with the
// shadow empty and the primary not is refused whatever NewPairing says,
// and reserved keys do not count as the primary's.
func TestThePairing(t *testing.T) {
	ctx := context.Background()
	two := Pairing{Account: "acc", Namespaces: []Namespace{{ID: "n1", Database: "d1"}, {ID: "n2", Database: "d2"}}}
	one := Pairing{Account: "acc", Namespaces: []Namespace{{ID: "n2", Database: "d2"}}}
	typo := Pairing{Account: "acc", Namespaces: []Namespace{{ID: "n1", Database: "d1x"}}}

	empty := NewMemoryBoard()
	if _, err := Read(ctx, Config{Board: empty, Pairing: two, Initial: dualwrite.Live}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "holds no stage document") {
		t.Errorf("a first start in live: %v", err)
	}
	if _, err := Read(ctx, Config{Board: empty, Pairing: two, Initial: dualwrite.Shadow}); err != nil {
		t.Errorf("a first start in shadow: %v", err)
	}
	if _, err := Read(ctx, Config{Board: empty, Pairing: two, Initial: dualwrite.Live, NewPairing: true}); err != nil {
		t.Errorf("a first start in live with NewPairing: %v", err)
	}

	board := NewMemoryBoard()
	if err := board.Swap(ctx, 0, Document{Stage: dualwrite.Shadow, Generation: 1}); err != nil {
		t.Fatal(err)
	}
	f, err := NewFollower(Config{Board: board, Target: &fakeTarget{}, Instance: "a", Pairing: two}, WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if doc, _ := board.Load(ctx); doc.Generation != 2 || doc.Pairing.String() != two.String() {
		t.Fatalf("after the first join: %+v, want the pairing recorded at generation 2", doc)
	}
	if _, err := f.SetStage(ctx, dualwrite.Handover); err != nil {
		t.Fatal(err)
	}
	if doc, _ := board.Load(ctx); doc.Generation != 3 || doc.Pairing.String() != two.String() {
		t.Fatalf("after a change: %+v, want the pairing carried", doc)
	}
	if _, err := Read(ctx, Config{Board: board, Pairing: one}); err != nil {
		t.Errorf("a part of the pairing: %v", err)
	}
	_, err = Read(ctx, Config{Board: board, Pairing: typo})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "governs "+two.String()+", and this instance serves "+typo.String()) {
		t.Errorf("another pairing: %v", err)
	}
	if _, err := Read(ctx, Config{Board: board, Pairing: typo, NewPairing: true}); err != nil {
		t.Errorf("another pairing with NewPairing: %v", err)
	}

	primary, shadow := memory.New(memory.Config{}), memory.New(memory.Config{})
	sides := []Sides{{Primary: primary, Shadow: shadow}}
	if err := primary.Put(ctx, kv.ReservedPrefix+"stage", []byte("handover"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	live := Config{Board: NewMemoryBoard(), Pairing: two, Initial: dualwrite.Live, NewPairing: true, Stores: sides}
	if _, err := Read(ctx, live); err != nil {
		t.Errorf("live over two stores empty but the stage key: %v", err)
	}
	if err := primary.Put(ctx, "wordle:k", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(ctx, live); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "MongoDB, authoritative in live, holds no key while Workers KV holds some") {
		t.Errorf("live over an empty shadow: %v", err)
	}
	live.Initial = dualwrite.Handover
	if _, err := Read(ctx, live); err != nil {
		t.Errorf("handover over an empty shadow: %v", err)
	}
}
