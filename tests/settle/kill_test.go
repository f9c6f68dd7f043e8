package settle_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/journal"
)

// A process writes through the store at a steady 1,200 writes a second
// with a slow shadow (5 ms plus up to 10 ms a copy, over 4 lanes: copies
// queue) and is killed with SIGKILL: no handler, no Close, only what the
// journal already holds survives. A store restarted on the same journal
// verifies every key in it, and after settling both stores are identical.
// It reports how many keys were unsettled at the kill and how many marks
// the kill lost (acknowledged writes whose key differed between the stores
// at the kill and was not in the journal).
func TestSettleAfterSIGKILL(t *testing.T) {
	r := newRig(t)
	path := filepath.Join(t.TempDir(), "settle.db")
	w := r.start(t, childConfig{
		ID: "k", Journal: path, Rate: 1200, Keys: 300,
		Latency: 5 * time.Millisecond, Jitter: 10 * time.Millisecond, Window: time.Second, Lanes: 4,
	})
	w.waitReady(t)
	began := time.Now()
	const target = 4000
	for w.ackCount() < target {
		select {
		case err := <-w.exited:
			t.Fatalf("writer ended: %v\n%s", err, w.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Since(began) > time.Minute {
			t.Fatalf("only %d writes in a minute", w.ackCount())
		}
	}
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-w.exited
	elapsed := time.Since(began)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the writer was not killed: %v", err)
	}
	w.mu.Lock()
	acks, acked := w.acks, make([]string, 0, len(w.acked))
	for k := range w.acked {
		acked = append(acked, k)
	}
	w.mu.Unlock()
	rate := float64(acks) / elapsed.Seconds()

	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	marks, _, err := j.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	differ := r.differing(t, acked)
	lost := 0
	for _, k := range differ {
		if marks[k] == dualwrite.MarkSettled {
			lost++
		}
	}
	t.Logf("killed after %d acknowledged writes in %s (%.0f writes/s) over %d keys: %d keys in the journal (unsettled at the kill), %d differing between the stores, %d marks lost",
		acks, elapsed.Round(time.Millisecond), rate, len(acked), len(marks), len(differ), lost)
	if rate < 1000 {
		t.Errorf("the writer reached %.0f writes/s, under the 1,000 this test is for", rate)
	}

	// The restart: a store on the same journal, with a healthy shadow.
	primary, shadow, done, err := openStores(context.Background(), r.baseURL, srv.URI(), r.db)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	st, err := dualwrite.New(dualwrite.Config{
		Primary: primary, Shadow: shadow, Stage: dualwrite.Shadow,
		ConsistencyWindow: time.Second, RepairInterval: 250 * time.Millisecond, Journal: j, Sink: &countSink{},
	}, dualwrite.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if s := st.Stats(); s.Loaded != uint64(len(marks)) {
		t.Fatalf("loaded %d keys, the journal had %d", s.Loaded, len(marks))
	}
	if err := waitSettled(st, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	s := st.Stats()
	if err := st.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, err := j.Len(); err != nil || n != 0 {
		t.Fatalf("journal holds %d keys after settling (%v)", n, err)
	}
	n := r.identical(t)
	t.Logf("after the restart: %d keys verified, %d divergences confirmed and repaired (%d repairs); both stores identical over %d keys",
		s.Verifications[compareMatch()]+s.Confirmed, s.Confirmed, s.Repairs[dualwrite.RepairCopied]+s.Repairs[dualwrite.RepairDeleted], n)
	if lost != 0 {
		t.Errorf("%d marks lost at the kill", lost)
	}
}
