package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/internal/syncbuf"
)

// fakeTarget records the stages applied and reports what a test sets.
type fakeTarget struct {
	mu      sync.Mutex
	stage   dualwrite.Stage
	applied []dualwrite.Stage
	refuse  error
	report  Heartbeat
}

func (t *fakeTarget) Apply(_ context.Context, s dualwrite.Stage) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.refuse != nil {
		return t.refuse
	}
	t.stage = s
	t.applied = append(t.applied, s)
	return nil
}

func (t *fakeTarget) Report(context.Context) Heartbeat {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.report
}

func (t *fakeTarget) set(f func(t *fakeTarget)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f(t)
}

func (t *fakeTarget) current() dualwrite.Stage {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stage
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func start(t *testing.T, board Board, clk *clock.Fake, id string, initial dualwrite.Stage) (*Follower, *fakeTarget) {
	t.Helper()
	tgt := &fakeTarget{report: Heartbeat{Drained: true}}
	f, err := NewFollower(Config{Board: board, Target: tgt, Instance: id, Initial: initial}, WithClock(clk), WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f, tgt
}

func TestFirstInstanceWritesTheDocumentOthersFollowIt(t *testing.T) {
	board, clk := NewMemoryBoard(), clock.NewFake(time.Unix(1e9, 0))
	a, ta := start(t, board, clk, "a", dualwrite.DualWrite)
	b, tb := start(t, board, clk, "b", dualwrite.Off) // its Initial loses to the document
	if ta.current() != dualwrite.DualWrite || tb.current() != dualwrite.DualWrite {
		t.Fatalf("stages %s, %s; want dualwrite for both", ta.current(), tb.current())
	}
	if a.Status().Generation != 1 || b.Status().Generation != 1 {
		t.Fatalf("generations %d, %d", a.Status().Generation, b.Status().Generation)
	}
	c, err := a.SetStage(t.Context(), dualwrite.Shadow)
	if err != nil || !c.Changed || !c.Applied || c.Document.Generation != 2 {
		t.Fatalf("SetStage = %+v, %v", c, err)
	}
	if tb.current() != dualwrite.DualWrite {
		t.Fatal("b changed before its poll")
	}
	for clk.Timers() < 4 { // both loops parked on their poll and heartbeat timers
		time.Sleep(time.Millisecond)
	}
	clk.Advance(DefaultPollInterval)
	waitFor(t, func() bool { return b.Status().Generation == 2 })
	if tb.current() != dualwrite.Shadow || !b.Status().InSync() {
		t.Fatalf("b after a poll: %s, %+v", tb.current(), b.Status())
	}
	// The same stage again changes nothing.
	if c, err := a.SetStage(t.Context(), dualwrite.Shadow); err != nil || c.Changed || c.Document.Generation != 2 {
		t.Fatalf("same stage: %+v, %v", c, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFlipWaitsForEveryInstance(t *testing.T) {
	board, clk := NewMemoryBoard(), clock.NewFake(time.Unix(1e9, 0))
	a, _ := start(t, board, clk, "a", dualwrite.Handover)
	b, tb := start(t, board, clk, "b", dualwrite.Handover)

	// b reports dirty keys in its heartbeat.
	tb.set(func(t *fakeTarget) { t.report = Heartbeat{Drained: true, Dirty: 3} })
	b.beat(t.Context())
	_, err := a.SetStage(t.Context(), dualwrite.Live)
	if !errors.Is(err, ErrNotDrained) || !errors.Is(err, dualwrite.ErrUnsynced) || !strings.Contains(err.Error(), `"b"`) || !strings.Contains(err.Error(), "3 dirty") {
		t.Fatalf("flip with b dirty: %v", err)
	}
	if doc, _ := board.Load(t.Context()); doc.Stage != dualwrite.Handover {
		t.Fatalf("the document moved to %s", doc.Stage)
	}

	// Not drained blocks too.
	tb.set(func(t *fakeTarget) { t.report = Heartbeat{Drained: false} })
	b.beat(t.Context())
	if _, err := a.SetStage(t.Context(), dualwrite.Live); !errors.Is(err, ErrNotDrained) || !strings.Contains(err.Error(), "not drained") {
		t.Fatalf("flip with b not drained: %v", err)
	}

	// The calling instance is checked afresh, not by its heartbeat.
	tb.set(func(t *fakeTarget) { t.report = Heartbeat{Drained: true} })
	b.beat(t.Context())
	a.cfg.Target.(*fakeTarget).set(func(t *fakeTarget) { t.report = Heartbeat{Drained: true, Dirty: 1} })
	if _, err := a.SetStage(t.Context(), dualwrite.Live); !errors.Is(err, ErrNotDrained) || !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("flip with a dirty: %v", err)
	}
	// Unsettled keys of a live instance do not hold a flip back: it
	// verifies them itself.
	tb.set(func(t *fakeTarget) { t.report = Heartbeat{Drained: true, Unsettled: 40} })
	b.beat(t.Context())
	a.cfg.Target.(*fakeTarget).set(func(t *fakeTarget) { t.report = Heartbeat{Drained: true} })

	c, err := a.SetStage(t.Context(), dualwrite.Live)
	if err != nil || !c.Applied || c.Document.Stage != dualwrite.Live {
		t.Fatalf("flip with all clean: %+v, %v", c, err)
	}
}

func TestStoppedOrSilentInstances(t *testing.T) {
	board, clk := NewMemoryBoard(), clock.NewFake(time.Unix(1e9, 0))
	a, _ := start(t, board, clk, "a", dualwrite.Handover)
	at := clk.Now()
	// A stopped instance that left dirty keys blocks; a stopped clean one
	// does not, whatever generation it ran.
	must(t, board.Beat(t.Context(), Heartbeat{Instance: "gone", At: at, Stopped: true, Dirty: 2, Stage: dualwrite.Handover, Generation: 1}))
	must(t, board.Beat(t.Context(), Heartbeat{Instance: "left", At: at.Add(-time.Hour), Stopped: true, Stage: dualwrite.Off, Generation: 0}))
	_, err := a.SetStage(t.Context(), dualwrite.Live)
	if !errors.Is(err, ErrNotDrained) || !strings.Contains(err.Error(), `"gone" (stopped`) || strings.Contains(err.Error(), `"left"`) {
		t.Fatalf("flip: %v", err)
	}
	// A silent instance blocks even when its last report was clean: it did
	// not leave, and may still serve cut off from the Board, writing
	// Workers KV alone.
	must(t, board.Beat(t.Context(), Heartbeat{Instance: "silent", At: at.Add(-time.Hour), Stage: dualwrite.Handover, Generation: 1, Drained: true}))
	must(t, a.Forget(t.Context(), "gone"))
	if _, err := a.SetStage(t.Context(), dualwrite.Live); !errors.Is(err, ErrNotDrained) ||
		!strings.Contains(err.Error(), `"silent" (silent for 1h0m0s`) || !strings.Contains(err.Error(), "without leaving") {
		t.Fatalf("flip: %v", err)
	}
	// With unsettled keys, it says those too.
	must(t, board.Beat(t.Context(), Heartbeat{Instance: "silent", At: at.Add(-time.Hour), Unsettled: 1}))
	if _, err := a.SetStage(t.Context(), dualwrite.Live); !errors.Is(err, ErrNotDrained) || !strings.Contains(err.Error(), "1 unsettled") {
		t.Fatalf("flip: %v", err)
	}
	must(t, a.Forget(t.Context(), "silent"))
	must(t, a.Forget(t.Context(), "left"))
	views, err := a.Instances(t.Context())
	if err != nil || len(views) != 1 || views[0].Instance != "a" || !views[0].Live {
		t.Fatalf("instances = %+v, %v", views, err)
	}
	if _, err := a.SetStage(t.Context(), dualwrite.Live); err != nil {
		t.Fatalf("flip after forgetting: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestTransitionRules(t *testing.T) {
	board, clk := NewMemoryBoard(), clock.NewFake(time.Unix(1e9, 0))
	a, _ := start(t, board, clk, "a", dualwrite.Off)
	if _, err := a.SetStage(t.Context(), dualwrite.Live); !errors.Is(err, dualwrite.ErrStageTransition) || !strings.Contains(err.Error(), "next allowed stage is dualwrite") {
		t.Fatalf("off to live: %v", err)
	}
	if _, err := a.SetStage(t.Context(), dualwrite.Stage(42)); !errors.Is(err, dualwrite.ErrInvalidConfig) {
		t.Fatalf("unknown stage: %v", err)
	}
	for _, to := range dualwrite.Stages[1:] {
		if _, err := a.SetStage(t.Context(), to); err != nil {
			t.Fatalf("to %s: %v", to, err)
		}
	}
	if _, err := a.SetStage(t.Context(), dualwrite.Rampdown); !errors.Is(err, dualwrite.ErrStageTransition) || !strings.Contains(err.Error(), "one-way") {
		t.Fatalf("complete to rampdown: %v", err)
	}
}

func TestApplyFailureLagsAndRetries(t *testing.T) {
	board, clk := NewMemoryBoard(), clock.NewFake(time.Unix(1e9, 0))
	a, _ := start(t, board, clk, "a", dualwrite.Handover)
	b, tb := start(t, board, clk, "b", dualwrite.Handover)
	tb.set(func(t *fakeTarget) { t.refuse = dualwrite.ErrUnsynced })
	if _, err := a.SetStage(t.Context(), dualwrite.Live); err != nil {
		t.Fatal(err)
	}
	b.Poll(t.Context())
	st := b.Status()
	if st.InSync() || st.Generation != 1 || st.Document.Generation != 2 || !strings.Contains(st.Lag, "generation 2 (live) not applied") {
		t.Fatalf("b refusing: %+v", st)
	}
	b.beat(t.Context())
	beats, _ := board.Instances(t.Context())
	if beats[1].Lag == "" || beats[1].Generation != 1 {
		t.Fatalf("b's heartbeat does not say it lags: %+v", beats[1])
	}
	// A flip back is refused while b lags.
	if _, err := a.SetStage(t.Context(), dualwrite.Handover); !errors.Is(err, ErrNotDrained) || !strings.Contains(err.Error(), "runs generation 1, not 2") {
		t.Fatalf("flip while b lags: %v", err)
	}
	tb.set(func(t *fakeTarget) { t.refuse = nil })
	b.Poll(t.Context())
	if st := b.Status(); !st.InSync() || tb.current() != dualwrite.Live {
		t.Fatalf("b after retry: %+v, %s", st, tb.current())
	}
}

func TestConflictAndLeave(t *testing.T) {
	board, clk := NewMemoryBoard(), clock.NewFake(time.Unix(1e9, 0))
	a, _ := start(t, board, clk, "a", dualwrite.DualWrite)
	if err := board.Swap(t.Context(), 7, Document{Generation: 8}); !errors.Is(err, ErrConflict) {
		t.Fatalf("swap on a stale generation: %v", err)
	}
	b, _ := start(t, board, clk, "b", dualwrite.DualWrite)
	a.SetDraining()
	waitFor(t, func() bool {
		beats, _ := board.Instances(t.Context())
		return len(beats) == 2 && beats[0].Draining
	})
	must(t, a.Leave(t.Context(), Heartbeat{}))
	must(t, b.Leave(t.Context(), Heartbeat{Unsettled: 4}))
	beats, _ := board.Instances(t.Context())
	if len(beats) != 1 || beats[0].Instance != "b" || !beats[0].Stopped || beats[0].Unsettled != 4 {
		t.Fatalf("after leaving: %+v", beats)
	}
}

func TestConfigRefused(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no board":    {Target: &fakeTarget{}, Instance: "a"},
		"no instance": {Board: NewMemoryBoard(), Target: &fakeTarget{}},
		"bad stage":   {Board: NewMemoryBoard(), Target: &fakeTarget{}, Instance: "a", Initial: 9},
		"negative":    {Board: NewMemoryBoard(), Target: &fakeTarget{}, Instance: "a", PollInterval: -1},
	} {
		if _, err := NewFollower(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The handover fence holds a flip across the fleet: another instance that
// received a binding copy recently, or still has keys a copy wrote last to
// verify, keeps the flip from happening, and FlipHold says which and for
// how long.
func TestFenceOfEveryInstance(t *testing.T) {
	board, clk := NewMemoryBoard(), clock.NewFake(time.Unix(1e9, 0))
	a, _ := start(t, board, clk, "a", dualwrite.Handover)
	b, tb := start(t, board, clk, "b", dualwrite.Handover)
	if h, ok, err := a.FlipHold(t.Context()); err != nil || !ok || len(h.HeldBy) != 0 || h.To != dualwrite.Live {
		t.Fatalf("FlipHold with nothing held: %+v, %v, %v", h, ok, err)
	}
	tb.set(func(t *fakeTarget) {
		t.report = Heartbeat{Drained: true, QuietUntil: clk.Now().Add(40 * time.Second), IngestUnverified: 3, FenceRemaining: time.Minute}
	})
	b.beat(t.Context())
	h, ok, err := a.FlipHold(t.Context())
	if err != nil || !ok || len(h.HeldBy) != 1 || h.Remaining != time.Minute ||
		!strings.Contains(h.HeldBy[0], `instance "b" (alive): the fence waits 40s more for binding copies, 3 keys last written by a binding copy or reloaded from the journal, not verified yet`) {
		t.Fatalf("FlipHold: %+v, %v, %v", h, ok, err)
	}
	clk.Advance(3 * time.Second) // before b's next heartbeat: its estimate counts down
	if h, _, _ := a.FlipHold(t.Context()); h.Remaining != 57*time.Second {
		t.Fatalf("FlipHold 3 s after b's heartbeat: remaining %s, want 57s", h.Remaining)
	}
	// The refusal says what holds it, not that an instance is not drained
	// or not clean: b is both.
	if _, err := a.SetStage(t.Context(), dualwrite.Live); !errors.Is(err, ErrNotDrained) || !strings.Contains(err.Error(), "binding copy") ||
		strings.Contains(err.Error(), "drained and clean") {
		t.Fatalf("flip with b's fence up: %v", err)
	}
	tb.set(func(t *fakeTarget) { t.report = Heartbeat{Drained: true, QuietUntil: clk.Now()} })
	b.beat(t.Context())
	if _, err := a.SetStage(t.Context(), dualwrite.Live); err != nil {
		t.Fatalf("flip once b's fence is down: %v", err)
	}
	if _, ok, _ := a.FlipHold(t.Context()); !ok {
		t.Fatal("no flip reported in live: the way back is one")
	}
	if _, err := a.SetStage(t.Context(), dualwrite.Rampdown); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := a.FlipHold(t.Context()); ok {
		t.Fatal("a flip reported in rampdown")
	}
}

// downBoard is a Board that cannot be read while down is set.
type downBoard struct {
	*MemoryBoard
	mu   sync.Mutex
	down bool
}

func (b *downBoard) err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down {
		return ErrBoard
	}
	return nil
}

func (b *downBoard) Load(ctx context.Context) (Document, error) {
	if err := b.err(); err != nil {
		return Document{}, err
	}
	return b.MemoryBoard.Load(ctx)
}

func (b *downBoard) Beat(ctx context.Context, h Heartbeat) error {
	if err := b.err(); err != nil {
		return err
	}
	return b.MemoryBoard.Beat(ctx, h)
}

// TestStartDetachedJoinsOnceTheBoardAnswers: an instance started without
// the Board runs its own last stage, says so, and follows the Document at
// the first poll that reads it.
func TestStartDetachedJoinsOnceTheBoardAnswers(t *testing.T) {
	board := &downBoard{MemoryBoard: NewMemoryBoard(), down: true}
	if err := board.MemoryBoard.Swap(t.Context(), 0, Document{Stage: dualwrite.Handover, Generation: 4}); err != nil {
		t.Fatal(err)
	}
	tgt := &fakeTarget{stage: dualwrite.Shadow, report: Heartbeat{Drained: true}}
	f, err := NewFollower(Config{Board: board, Target: tgt, Instance: "a", PollInterval: time.Hour}, WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.StartDetached(dualwrite.Shadow, ErrBoard); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if st := f.Status(); !st.Detached || st.Stage != dualwrite.Shadow || st.BoardErr == "" || len(tgt.applied) != 0 {
		t.Fatalf("detached: %+v, applied %v", st, tgt.applied)
	}
	f.Poll(t.Context()) // still down
	if st := f.Status(); !st.Detached {
		t.Fatalf("joined a Board that cannot be read: %+v", st)
	}
	board.mu.Lock()
	board.down = false
	board.mu.Unlock()
	f.Poll(t.Context())
	if st := f.Status(); st.Detached || !st.InSync() || st.Stage != dualwrite.Handover || st.Generation != 4 || tgt.current() != dualwrite.Handover {
		t.Fatalf("after the Board answered: %+v, target %s", st, tgt.current())
	}
}

// hangingBoard is a Board whose heartbeats never answer: each waits for
// its context.
// hangingBoard's polls hang, while hang is set, until their context ends.
type hangingBoard struct {
	*MemoryBoard
	hang atomic.Bool
	in   chan struct{} // a poll is waiting
}

func (b *hangingBoard) Load(ctx context.Context) (Document, error) {
	if !b.hang.Load() {
		return b.MemoryBoard.Load(ctx)
	}
	select {
	case b.in <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return Document{}, fmt.Errorf("%w: reading the stage document: %w", ErrBoard, ctx.Err()) // as the MongoDB Board wraps it
}

// TestCloseEndsAPollInFlight: a poll of a Board that does not answer
// (MongoDB down while the instance shuts down) ends at Close, not after
// BoardTimeout (an hour here), and its end is no news of the Board:
// nothing is logged or reported for it.
func TestCloseEndsAPollInFlight(t *testing.T) {
	board := &hangingBoard{MemoryBoard: NewMemoryBoard(), in: make(chan struct{}, 1)}
	var logged syncbuf.Buffer
	f, err := NewFollower(Config{Board: board, Target: &fakeTarget{report: Heartbeat{Drained: true}}, Instance: "a",
		PollInterval: 10 * time.Millisecond, HeartbeatInterval: time.Hour, BoardTimeout: time.Hour},
		WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	board.hang.Store(true)
	select {
	case <-board.in:
	case <-time.After(time.Minute):
		t.Fatal("no poll")
	}
	closed := make(chan struct{})
	go func() { f.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("Close waited for a poll that the Board never answers")
	}
	if st := f.Status(); st.BoardErr != "" || logged.String() != "" {
		t.Errorf("the poll Close ended was reported as the Board's failure: %q; logged %q", st.BoardErr, logged.String())
	}
}

// lateBoard holds each heartbeat, while hold is set, until release is
// closed, and applies it then: answered, if its caller still waits; later,
// if its caller gave up (its context ended), as a server applies a write
// its client gave up on.
type lateBoard struct {
	*MemoryBoard
	hold    atomic.Bool
	in      chan struct{} // a heartbeat is held
	release chan struct{}
	late    sync.WaitGroup // the writes applied after their caller gave up
}

func (b *lateBoard) Beat(ctx context.Context, h Heartbeat) error {
	if !b.hold.Load() {
		return b.MemoryBoard.Beat(ctx, h)
	}
	select {
	case b.in <- struct{}{}:
	default:
	}
	select {
	case <-b.release:
		return b.MemoryBoard.Beat(context.WithoutCancel(ctx), h)
	case <-ctx.Done():
		b.late.Go(func() {
			<-b.release
			_ = b.MemoryBoard.Beat(context.Background(), h)
		})
		return fmt.Errorf("%w: writing the heartbeat: %w", ErrBoard, ctx.Err())
	}
}

// TestLeaveWritesTheLastHeartbeat: the draining heartbeat that SIGTERM
// sends is still in flight when the instance closes. Close lets it finish,
// so that Leave's heartbeat (stopped, with keys left) is the last: cut
// short, it was applied after Leave's and read as an instance alive, which
// a flip then did not wait for as stopped.
func TestLeaveWritesTheLastHeartbeat(t *testing.T) {
	board := &lateBoard{MemoryBoard: NewMemoryBoard(), in: make(chan struct{}, 1), release: make(chan struct{})}
	f, err := NewFollower(Config{Board: board, Target: &fakeTarget{report: Heartbeat{Drained: true}}, Instance: "a",
		PollInterval: time.Hour, HeartbeatInterval: time.Hour, BoardTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	board.hold.Store(true)
	f.SetDraining()
	select {
	case <-board.in:
	case <-time.After(time.Minute):
		t.Fatal("SetDraining sent no heartbeat")
	}
	closed := make(chan struct{})
	go func() { f.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned with a heartbeat in flight")
	case <-time.After(200 * time.Millisecond):
	}
	board.hold.Store(false)
	close(board.release)
	<-closed
	if err := f.Leave(t.Context(), Heartbeat{Dirty: 1}); err != nil {
		t.Fatal(err)
	}
	board.late.Wait()
	beats, err := board.Instances(t.Context())
	if err != nil || len(beats) != 1 || !beats[0].Stopped || beats[0].Dirty != 1 {
		t.Fatalf("the heartbeats after Leave: %+v, %v; want a stopped with its dirty key", beats, err)
	}
}

// TestADetachedInstanceSaysNothingItsCallerSaid: a detached start and the
// Board calls that fail while detached are what the caller said at start
// (one warning of its own): the Follower logs none of them, and keeps the
// last failure in Status.BoardErr; it says the join in one info line.
func TestADetachedInstanceSaysNothingItsCallerSaid(t *testing.T) {
	board := &downBoard{MemoryBoard: NewMemoryBoard(), down: true}
	if err := board.MemoryBoard.Swap(t.Context(), 0, Document{Stage: dualwrite.Shadow, Generation: 2}); err != nil {
		t.Fatal(err)
	}
	var logged syncbuf.Buffer
	tgt := &fakeTarget{stage: dualwrite.Shadow, report: Heartbeat{Drained: true}}
	f, err := NewFollower(Config{Board: board, Target: tgt, Instance: "a", PollInterval: time.Hour, HeartbeatInterval: time.Hour},
		WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.StartDetached(dualwrite.Shadow, nil); err != nil { // the caller gave no reason: the first failure sets it
		t.Fatal(err)
	}
	defer f.Close()
	for range 3 {
		f.Poll(t.Context())
		f.beat(t.Context())
	}
	if st := f.Status(); !st.Detached || !strings.Contains(st.BoardErr, ErrBoard.Error()) {
		t.Errorf("while the Board is down: %+v; want detached, BoardErr saying why", st)
	}
	if out := logged.String(); out != "" {
		t.Errorf("the Follower logged a detached start its caller says:\n%s", out)
	}
	board.mu.Lock()
	board.down = false
	board.mu.Unlock()
	f.Poll(t.Context())
	if st := f.Status(); st.Detached || st.BoardErr != "" || !st.InSync() {
		t.Fatalf("after the Board answered: %+v", st)
	}
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], "control board answers") ||
		!strings.Contains(lines[0], "generation=2") || !strings.Contains(lines[0], "stage=shadow") {
		t.Errorf("the join logged %d lines, want one info line naming the generation and stage:\n%s", len(lines), logged.String())
	}
}

// TestADetachedInstanceSeedsAnEmptyBoardWithTheStageItServes: an instance
// that started detached in shadow (its stage file's) and joins a Board
// with no Document writes shadow as generation 1, what its writes have
// been doing, not Initial, and stays in shadow; one detached in live
// (serving nothing, unverified) writes Initial, as a start that read the
// Board does.
func TestADetachedInstanceSeedsAnEmptyBoardWithTheStageItServes(t *testing.T) {
	for _, c := range []struct{ served, initial, want dualwrite.Stage }{
		{dualwrite.Shadow, dualwrite.DualWrite, dualwrite.Shadow},
		{dualwrite.Handover, dualwrite.Off, dualwrite.Handover},
		{dualwrite.Live, dualwrite.DualWrite, dualwrite.DualWrite},
	} {
		board := &downBoard{MemoryBoard: NewMemoryBoard(), down: true}
		tgt := &fakeTarget{stage: c.served, report: Heartbeat{Drained: true}}
		f, err := NewFollower(Config{Board: board, Target: tgt, Instance: "a", Initial: c.initial, PollInterval: time.Hour, HeartbeatInterval: time.Hour},
			WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.StartDetached(c.served, ErrBoard); err != nil {
			t.Fatal(err)
		}
		f.Poll(t.Context())
		board.mu.Lock()
		board.down = false
		board.mu.Unlock()
		f.Poll(t.Context())
		f.Close()
		doc, err := board.MemoryBoard.Load(t.Context())
		if err != nil || doc.Stage != c.want || doc.Generation != 1 || doc.UpdatedBy != "a" {
			t.Errorf("detached in %s, Initial %s: the Board's document %+v, %v; want %s at generation 1", c.served, c.initial, doc, err, c.want)
		}
		if st := f.Status(); st.Detached || st.Stage != c.want || tgt.current() != c.want {
			t.Errorf("detached in %s, Initial %s: %+v, target %s; want %s", c.served, c.initial, st, tgt.current(), c.want)
		}
		if c.served == c.want && len(tgt.applied) != 1 {
			t.Errorf("detached in %s: the target was applied %v; want only %s, no step", c.served, tgt.applied, c.want)
		}
	}
}

// deadlineTarget records how long each Report was given.
type deadlineTarget struct {
	fakeTarget
	mu   sync.Mutex
	left []time.Duration // -1: no deadline
}

func (t *deadlineTarget) Report(ctx context.Context) Heartbeat {
	d := time.Duration(-1)
	if dl, ok := ctx.Deadline(); ok {
		d = time.Until(dl)
	}
	t.mu.Lock()
	t.left = append(t.left, d)
	t.mu.Unlock()
	return Heartbeat{Drained: true}
}

// A Report that waits (kvshadow-proxy's waits for the lanes) is given half
// a heartbeat interval, not the Board's timeout: a heartbeat held back past
// LiveFor would make the others take a live instance for dead, and confirm
// what its copies on their way explain.
func TestReportHasHalfAHeartbeat(t *testing.T) {
	tgt := &deadlineTarget{}
	f, err := NewFollower(Config{Board: NewMemoryBoard(), Target: tgt, Instance: "a", Initial: dualwrite.Shadow, HeartbeatInterval: 2 * time.Second},
		WithClock(clock.NewFake(time.Unix(1e9, 0))), WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tgt.mu.Lock()
	defer tgt.mu.Unlock()
	if len(tgt.left) == 0 || tgt.left[0] < 0 || tgt.left[0] > time.Second {
		t.Fatalf("Report given %v; want at most half the 2s heartbeat interval", tgt.left)
	}
}

// countingBoard counts the Board's reads of the Document.
type countingBoard struct {
	*MemoryBoard
	loads atomic.Int32
}

func (b *countingBoard) Load(ctx context.Context) (Document, error) {
	b.loads.Add(1)
	return b.MemoryBoard.Load(ctx)
}

// StartFrom trusts the read its caller has just made, an empty Board's
// too: it writes the first Document without reading the Board again, and
// a Document another instance wrote since makes that write a conflict,
// after which it follows the other's.
func TestStartFromAnEmptyBoardReadsItNoMore(t *testing.T) {
	clk := clock.NewFake(time.Unix(1e9, 0))
	for _, other := range []bool{false, true} {
		board := &countingBoard{MemoryBoard: NewMemoryBoard()}
		if other {
			if err := board.Swap(t.Context(), 0, Document{Stage: dualwrite.Shadow, Generation: 1}); err != nil {
				t.Fatal(err)
			}
		}
		tgt := &fakeTarget{report: Heartbeat{Drained: true}}
		f, err := NewFollower(Config{Board: board, Target: tgt, Instance: "a", Initial: dualwrite.DualWrite}, WithClock(clk), WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.StartFrom(t.Context(), Document{}); err != nil {
			t.Fatal(err)
		}
		f.Close()
		want, loads := dualwrite.DualWrite, int32(0)
		if other {
			want, loads = dualwrite.Shadow, 1 // the conflict's read
		}
		if doc, _ := board.MemoryBoard.Load(t.Context()); tgt.current() != want || doc.Stage != want || board.loads.Load() != loads {
			t.Errorf("another's document first %v: the instance runs %s, the board holds %s, after %d reads; want %s after %d",
				other, tgt.current(), doc.Stage, board.loads.Load(), want, loads)
		}
	}
}
