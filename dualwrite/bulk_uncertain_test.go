package dualwrite_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// landsThenTimesOut is an authoritative store whose bulk calls apply the
// whole batch and then report a timeout, as a bulk write cut short by its
// deadline after the store took it does: the caller cannot know which of
// the keys landed.
type landsThenTimesOut struct{ *memory.Store }

func (s landsThenTimesOut) PutMany(ctx context.Context, es []kv.Entry) error {
	if err := s.Store.PutMany(ctx, es); err != nil {
		return err
	}
	return context.DeadlineExceeded
}

func (s landsThenTimesOut) DeleteMany(ctx context.Context, keys []string) error {
	if err := s.Store.DeleteMany(ctx, keys); err != nil {
		return err
	}
	return context.DeadlineExceeded
}

// TestBulkWriteOfUnknownOutcomeMarksEveryKey: a bulk write the
// authoritative store answers with a timeout may have landed any of its
// keys, so every key is dirty (repair then copies what the store holds),
// not only the first one with the rest left unsettled until a
// verification a window later.
func TestBulkWriteOfUnknownOutcomeMarksEveryKey(t *testing.T) {
	ctx := context.Background()
	pmem := memory.New(memory.Config{})
	s, err := dualwrite.New(dualwrite.Config{Primary: landsThenTimesOut{pmem}, Shadow: memory.New(memory.Config{}), Stage: dualwrite.DualWrite, RepairInterval: never},
		dualwrite.WithLogger(discardLogger()))
	must(t, err)
	t.Cleanup(func() { _ = s.Close(ctx) })

	const n = 50
	var puts []kv.Entry
	var deletes []string
	for i := range n {
		k := fmt.Sprintf("wordle:%03d", i)
		puts = append(puts, kv.Entry{Key: k, Value: []byte(k)})
		d := fmt.Sprintf("streak:%03d", i)
		must(t, pmem.Put(ctx, d, []byte(d), kv.PutOptions{}))
		deletes = append(deletes, d)
	}
	if err := s.PutMany(ctx, puts); err == nil {
		t.Fatal("PutMany answered by a timeout succeeded")
	}
	if st := s.Stats(); st.Dirty != n {
		t.Fatalf("after a bulk put of unknown outcome %d keys are dirty, want all %d", st.Dirty, n)
	}
	if err := s.DeleteMany(ctx, deletes); err == nil {
		t.Fatal("DeleteMany answered by a timeout succeeded")
	}
	if st := s.Stats(); st.Dirty != 2*n {
		t.Fatalf("after a bulk delete of unknown outcome %d keys are dirty, want all %d", st.Dirty-n, n)
	}
}
