package settle_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/journal"
)

// killPoint is when a writer is killed: delay after the beginning of its
// burst-th burst.
type killPoint struct {
	name  string
	burst int
	delay time.Duration
}

// A writer process puts keys it has never written before, in bursts of
// 1 s at 1,500 a second separated by pauses of 1 s, through a store with a
// slow shadow (a second REST API server, with 5 ms plus up to 10 ms a
// copy, over 4 lanes: copies queue and lanes overflow, so keys are
// unsettled and dirty at once), and is
// killed with SIGKILL: no handler, no Close, only what its journal holds
// survives. Every write is a key entering the settle set, so every mark
// the journal lacks is a key nobody will ever verify. Killed at several
// points (a burst's first 100 ms, when marks have been made and the group
// commit has not caught up; its very start; its middle; a pause), then a
// store restarted on the journal settles both stores identical, and no
// key that differed between the stores at the kill was missing from the
// journal. It logs how many marks only the mark log held at the kill
// (journal.Recovered): what a crash of the machine at that moment would
// have lost.
func TestSettleAfterSIGKILL(t *testing.T) {
	for _, kp := range []killPoint{
		{"first-burst-100ms", 1, 100 * time.Millisecond},
		{"second-burst-start", 2, 0},
		{"second-burst-100ms", 2, 100 * time.Millisecond},
		{"second-burst-600ms", 2, 600 * time.Millisecond},
		{"pause-after-second-burst", 2, 1500 * time.Millisecond},
	} {
		t.Run(kp.name, func(t *testing.T) { killAndSettle(t, kp) })
	}
}

// burst is how long the writer of TestSettleAfterSIGKILL writes at a time.
const burst = time.Second

func killAndSettle(t *testing.T, kp killPoint) {
	r := newRigOf(t, true)
	path := filepath.Join(t.TempDir(), "settle.db")
	w := r.start(t, childConfig{
		ID: "k", Journal: path, Rate: 1500, NewKeys: true, Burst: burst, Pause: time.Second,
		Latency: 5 * time.Millisecond, Jitter: 10 * time.Millisecond, Window: time.Second, Lanes: 4,
	})
	w.waitReady(t)
	var began time.Time
	for b := 0; b < kp.burst; {
		select {
		case b = <-w.bursts:
			began = time.Now()
		case err := <-w.exited:
			t.Fatalf("writer ended: %v\n%s", err, w.stderr.String())
		case <-time.After(time.Minute):
			t.Fatal("no burst in a minute")
		}
	}
	time.Sleep(kp.delay) // the kill point: an input, not an assertion
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-w.exited
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the writer was not killed: %v", err)
	}
	inBurst := time.Since(began)
	r.quiet(t)
	w.mu.Lock()
	acks, errs, atBurst := w.acks, slices.Clone(w.errs), slices.Clone(w.burstAcks)
	w.mu.Unlock()
	if len(errs) > 0 {
		t.Errorf("%d writes failed, first: %s", len(errs), errs[0])
	}
	if len(atBurst) > 1 { // a whole burst was written: its rate
		if rate := float64(atBurst[1]-atBurst[0]) / burst.Seconds(); rate < 1000 {
			t.Errorf("the writer put %.0f new keys a second in its first burst, under the 1,000 this test is for", rate)
		} else {
			t.Logf("the first burst: %.0f new keys a second", rate)
		}
	}

	// Every key either store holds, compared: the keys written at all,
	// those whose write was in flight at the kill included.
	all := map[string]bool{}
	for _, k := range keys(t, r.primary) {
		all[k] = true
	}
	for _, k := range keys(t, r.shadow) {
		all[k] = true
	}
	written := make([]string, 0, len(all))
	for k := range all {
		written = append(written, k)
	}
	differ := r.differing(t, written)

	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	recovered := j.Recovered()
	marks, _, err := j.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var lost []string
	for _, k := range differ {
		if marks[k] == dualwrite.MarkSettled {
			lost = append(lost, k)
		}
	}
	t.Logf("killed %s into burst %d after %d acknowledged writes; %d keys written, %d differing between the stores, %d in the journal (%d of them only in its mark log: a machine crash would have lost them), %d marks lost",
		inBurst.Round(time.Millisecond), kp.burst, acks, len(written), len(differ), len(marks), recovered, len(lost))

	// The restart: a store on the same journal, with a healthy shadow.
	primary, shadow, done, err := openStores(context.Background(), r.apiURL(r.checkURL), r.shadowAPI(), srv.URI(), r.db)
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
	if err := waitSettled(st, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	s := st.Stats()
	if err := st.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, err := j.Len(); err != nil || n != 0 {
		t.Fatalf("journal holds %d keys after settling (%v)", n, err)
	}
	divergent := r.differing(t, written)
	t.Logf("after the restart: %d keys loaded, %d of them found different and repaired as known (recovered), %d divergences confirmed and reported; %d keys divergent",
		s.Loaded, s.Recovered, s.Confirmed, len(divergent))
	// Every key that differed is named by the journal (no mark lost): its
	// copy died with the process, which is known, not a divergence.
	if s.Confirmed != 0 || s.Divergences() != 0 {
		t.Errorf("%d divergences confirmed after the restart (%d differed at the kill, all named by the journal)", s.Confirmed, len(differ))
	}
	if len(lost) > 0 {
		t.Errorf("%d marks lost at the kill: %s", len(lost), sample(lost))
	}
	if len(divergent) > 0 {
		t.Errorf("%d keys divergent after settling: %s", len(divergent), sample(divergent))
	}
	r.identical(t)
}

func sample(ks []string) string {
	if len(ks) > 5 {
		return fmt.Sprint(ks[:5], " ...")
	}
	return fmt.Sprint(ks)
}
