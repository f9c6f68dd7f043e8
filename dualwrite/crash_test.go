package dualwrite_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// recordingJournal is a gateJournal with the Recorder ability: it keeps
// what Record was given, in order.
type recordingJournal struct {
	gateJournal
	recMu   sync.Mutex
	records []string
	seals   int
}

func (r *recordingJournal) Record(key string, m dualwrite.Mark) bool {
	r.recMu.Lock()
	defer r.recMu.Unlock()
	r.records = append(r.records, fmt.Sprintf("%s=%s", key, m))
	return true
}

func (r *recordingJournal) Seal() {
	r.recMu.Lock()
	r.seals++
	r.recMu.Unlock()
}

func (r *recordingJournal) recorded() []string {
	r.recMu.Lock()
	defer r.recMu.Unlock()
	return slices.Clone(r.records)
}

// heldStore holds each write in the primary until release says what it
// returns, so that a test can look at the Store while the write is in
// flight.
type heldStore struct {
	*memory.Store
	entered chan string
	release chan error
}

func (h *heldStore) Put(ctx context.Context, key string, value []byte, opts kv.PutOptions) error {
	h.entered <- key
	if err := <-h.release; err != nil {
		return err
	}
	return h.Store.Put(ctx, key, value, opts)
}

func (h *heldStore) PutMany(ctx context.Context, es []kv.Entry) error {
	h.entered <- es[0].Key
	if err := <-h.release; err != nil {
		return err
	}
	return h.Store.PutMany(ctx, es)
}

// A write's key is in the settle set, and recorded by the journal, before
// the write reaches the authoritative store: a process killed while the
// write is in flight finds it in the journal. The write then failing
// cleanly leaves the key unsettled, and verification after the window
// finds the stores equal: the key leaves with nothing reported. The same
// for a bulk write, and for an ingested copy, whose primary write is done
// already, recorded before Ingest returns.
func TestMarkedBeforeTheAuthoritativeWrite(t *testing.T) {
	clk := clock.NewFake(start)
	primary := &heldStore{Store: memory.New(memory.Config{Clock: clk}), entered: make(chan string), release: make(chan error)}
	shadow := memory.New(memory.Config{Clock: clk})
	j := &recordingJournal{gateJournal: gateJournal{marks: map[string]dualwrite.Mark{}}}
	sink := &sinkRecorder{}
	s, err := dualwrite.New(dualwrite.Config{
		Primary: primary, Shadow: shadow, Stage: dualwrite.Shadow, ConsistencyWindow: window,
		RepairInterval: never, Journal: j, Sink: sink,
	}, dualwrite.WithClock(clk), dualwrite.WithLogger(discardLogger()))
	must(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	ctx := context.Background()

	inFlight := func(write func() error, keys ...string) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- write() }()
		<-primary.entered
		want := make([]string, len(keys))
		for i, k := range keys {
			want[i] = k + "=unsettled"
		}
		if got := j.recorded(); !slices.Equal(got[len(got)-min(len(got), len(keys)):], want) {
			t.Errorf("while the write is in flight the journal recorded %v, want %v last", got, want)
		}
		if un := s.UnsettledKeys(); len(un) < len(keys) {
			t.Errorf("while the write is in flight the settle set holds %v", un)
		}
		primary.release <- fmt.Errorf("refused: %w", kv.ErrInvalidValue) // a clean failure
		return <-done
	}
	err = inFlight(func() error { return s.Put(ctx, "wordle:a", []byte("1"), kv.PutOptions{}) }, "wordle:a")
	wantErr(t, "the refused Put", err, kv.ErrInvalidValue)
	err = inFlight(func() error {
		return s.PutMany(ctx, []kv.Entry{{Key: "wordle:b", Value: []byte("2")}, {Key: "wordle:c", Value: []byte("3")}})
	}, "wordle:b", "wordle:c")
	wantErr(t, "the refused PutMany", err, kv.ErrInvalidValue)
	must(t, primary.Store.Put(ctx, "wordle:d", []byte("4"), kv.PutOptions{})) // the tee's binding write
	must(t, s.Ingest(ctx, []dualwrite.TeeWrite{{Key: "wordle:d", Value: []byte("4"), At: clk.Now()}}))
	if got := j.recorded(); !slices.Contains(got, "wordle:d=unsettled") {
		t.Fatalf("Ingest returned before its mark was recorded: %v", got)
	}
	must(t, s.Flush(ctx))

	clk.Advance(window + time.Second)
	if _, err := s.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Dirty+st.Unsettled != 0 || st.Confirmed != 0 || len(sink.records()) != 0 || st.JournalErrors != 0 {
		t.Fatalf("after verification: %d dirty, %d unsettled, %d confirmed, %d reported, %d journal errors; want the refused writes' keys gone with no report",
			st.Dirty, st.Unsettled, st.Confirmed, len(sink.records()), st.JournalErrors)
	}
}
