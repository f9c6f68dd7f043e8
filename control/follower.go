package control

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// The defaults of a zero Config field.
const (
	DefaultPollInterval      = 2 * time.Second
	DefaultHeartbeatInterval = 5 * time.Second
	// DefaultBoardTimeout bounds each read or write of the Board.
	DefaultBoardTimeout = 5 * time.Second
)

// Target is what a Follower drives: the instance's dual-write stores.
type Target interface {
	// Apply moves every store to stage; a failure is retried at the next poll.
	Apply(ctx context.Context, stage dualwrite.Stage) error
	// Report returns the instance's part of its heartbeat (the Follower
	// fills in the rest). ctx ends half a HeartbeatInterval after the call.
	Report(ctx context.Context) Heartbeat
}

// Config configures a Follower; zero fields mean the defaults.
type Config struct {
	// Board, Target and Instance (this instance's name) are required.
	Board    Board
	Target   Target
	Instance string
	// Initial is the stage written when the Board has no Document yet
	// (see StartDetached for a detached instance).
	Initial           dualwrite.Stage
	PollInterval      time.Duration
	HeartbeatInterval time.Duration
	// LiveFor is the age under which a heartbeat counts as a live
	// instance. Default three HeartbeatIntervals: a live instance's
	// heartbeat is at most one and a half old, and a Board write (beats
	// keep their cadence, and Report gets half an interval).
	LiveFor      time.Duration
	BoardTimeout time.Duration
	// Pairing, NewPairing and Stores are what Read checks ("The pairing" in
	// the package doc); the Follower does not use Stores.
	Pairing    Pairing
	NewPairing bool
	Stores     []Sides
	// Fleet learns the others' watermarks after every heartbeat. Nil: a
	// Stores Target's Fleet, else none (and with several instances the
	// stores confirm differences another's copies explain).
	Fleet *Fleet
}

// Status is what the Follower knows of its own instance.
type Status struct {
	Instance   string
	Generation uint64
	Stage      dualwrite.Stage
	// Document is the last Document read from the Board, and Polled when.
	Document Document
	Polled   time.Time
	// Lag says why the instance does not run Document, when it does not;
	// BoardErr is the last failure to reach the Board, cleared by a
	// success.
	Lag      string
	BoardErr string
	// Detached: started by StartDetached and has not read the Board since.
	Detached bool
	Draining bool
	// PeersUntil: see PeerAware; zero until the Board shows a peer or
	// cannot be read.
	PeersUntil time.Time
}

// InSync reports whether the instance runs the Document it last read.
func (s Status) InSync() bool { return s.Lag == "" && s.Generation == s.Document.Generation }

// Follower keeps one instance on the Board's Document. Start it with Start,
// stop it with Close.
type Follower struct {
	cfg   Config
	clock clock.Clock
	log   *slog.Logger

	mu      sync.Mutex // guards status
	status  Status
	applyMu sync.Mutex // serializes applying a Document

	seen map[string]bool // the others at the last heartbeat; the heartbeat's goroutine only

	beatNow chan struct{}
	done    chan struct{}
	started atomic.Bool
	// life ends at Close, and with it a poll in flight; beats, the
	// heartbeats' context, ends only when the Board did not answer lately
	// (see Close and beat).
	life      context.Context
	stopLife  context.CancelFunc
	beats     context.Context
	stopBeats context.CancelFunc
}

// Option sets a piece of plumbing.
type Option func(*Follower)

// WithClock sets the Follower's clock.
func WithClock(c clock.Clock) Option { return func(f *Follower) { f.clock = c } }

// WithLogger sets the logger of stage changes and Board failures.
func WithLogger(l *slog.Logger) Option { return func(f *Follower) { f.log = l } }

// NewFollower checks cfg; Start begins following.
func NewFollower(cfg Config, opts ...Option) (*Follower, error) {
	switch {
	case cfg.Board == nil || cfg.Target == nil:
		return nil, fmt.Errorf("%w: Board and Target are required", ErrConfig)
	case cfg.Instance == "":
		return nil, fmt.Errorf("%w: Instance is required", ErrConfig)
	case !cfg.Initial.Valid():
		return nil, fmt.Errorf("%w: unknown initial stage %s", ErrConfig, cfg.Initial)
	case cfg.PollInterval < 0 || cfg.HeartbeatInterval < 0 || cfg.LiveFor < 0 || cfg.BoardTimeout < 0:
		return nil, fmt.Errorf("%w: intervals must not be negative", ErrConfig)
	}
	cfg.PollInterval = cmp.Or(cfg.PollInterval, DefaultPollInterval)
	cfg.HeartbeatInterval = cmp.Or(cfg.HeartbeatInterval, DefaultHeartbeatInterval)
	cfg.LiveFor = cmp.Or(cfg.LiveFor, 3*cfg.HeartbeatInterval)
	cfg.BoardTimeout = cmp.Or(cfg.BoardTimeout, DefaultBoardTimeout)
	if st, ok := cfg.Target.(*Stores); ok && cfg.Fleet == nil {
		cfg.Fleet = st.fleet
	}
	f := &Follower{cfg: cfg, beatNow: make(chan struct{}, 1), done: make(chan struct{})}
	f.life, f.stopLife = context.WithCancel(context.Background())
	f.beats, f.stopBeats = context.WithCancel(context.Background())
	for _, o := range opts {
		if o != nil {
			o(f)
		}
	}
	f.clock = clock.OrReal(f.clock)
	f.log = cmp.Or(f.log, slog.Default())
	f.status = Status{Instance: cfg.Instance, Stage: cfg.Initial}
	return f, nil
}

// Start reads the Document (writing Initial as generation 1 when there is
// none), applies it, writes the first heartbeat and starts following. It
// fails if the Board cannot be read or the stage cannot be applied.
func (f *Follower) Start(ctx context.Context) error {
	doc, err := f.load(ctx)
	if err != nil {
		return err
	}
	return f.StartFrom(ctx, doc)
}

// StartFrom starts as Start does, from doc, which the caller has just read
// from the Board (the zero Document: the Board held none), without reading
// it again: a Document written since makes the first write a conflict.
func (f *Follower) StartFrom(ctx context.Context, doc Document) error {
	if err := f.join(ctx, doc); err != nil {
		return err
	}
	f.beat(ctx)
	f.started.Store(true)
	go f.loop()
	return nil
}

// StartDetached starts an instance that could not read the Board (boardErr)
// and whose Target runs last already; it joins as Start does at the first
// poll that reads the Board ("Starting without the Board" in the package
// doc).
func (f *Follower) StartDetached(last dualwrite.Stage, boardErr error) error {
	if !last.Valid() {
		return fmt.Errorf("%w: unknown stage %s", ErrConfig, last)
	}
	f.mu.Lock()
	f.status.Stage, f.status.Detached = last, true
	if boardErr != nil {
		f.status.BoardErr = boardErr.Error()
	}
	f.status.Document = Document{Stage: last}
	f.mu.Unlock()
	f.started.Store(true)
	go f.loop()
	return nil
}

// join writes what claim says first for doc, just read, and applies it.
func (f *Follower) join(ctx context.Context, doc Document) error {
	next, err := f.cfg.claim(doc, f.seed())
	if err != nil {
		return err
	}
	seeded := false
	if next.Generation > 0 {
		next.UpdatedAt, next.UpdatedBy = f.clock.Now(), f.cfg.Instance
		if err = f.swap(ctx, doc.Generation, next); errors.Is(err, ErrConflict) { // another instance started first
			if doc, err = f.load(ctx); err == nil {
				err = f.cfg.refuse(doc, f.seed())
			}
		} else if err == nil {
			f.logClaim(doc, next)
			doc, seeded = next, doc.Generation == 0
		}
		if err != nil {
			return err
		}
	}
	f.mu.Lock()
	was := f.status.Detached
	f.status.Detached = false
	f.mu.Unlock()
	if was {
		f.logJoin(doc, seeded)
	}
	return f.apply(ctx, doc)
}

func (f *Follower) logClaim(doc, next Document) {
	if was := cmp.Or(doc.Pairing.String(), "none (it was written before pairings were recorded)"); doc.Generation > 0 {
		f.log.Info("control: recorded this instance's pairing in the stage document, which named "+was,
			slog.Uint64("generation", next.Generation), slog.String("pairing", next.Pairing.String()))
	}
}

// seed is the stage an instance writes to a Board with no Document. A
// detached instance's last stage of live or later, unverified, must not
// make MongoDB authoritative (a Board found empty may be the wrong database).
func (f *Follower) seed() dualwrite.Stage {
	st := f.Status()
	if st.Detached && ServesDetached(st.Stage) {
		return st.Stage
	}
	return f.cfg.Initial
}

func (f *Follower) logJoin(doc Document, seeded bool) {
	msg := "control: the control board answers; following the stage document"
	if seeded {
		msg = "control: the control board answers and held no stage document; wrote the stage this instance serves as generation 1 and follows it"
	}
	f.log.Info(msg, slog.Uint64("generation", doc.Generation), slog.String("stage", doc.Stage.String()))
}

// Close stops following and waits for the loop. A heartbeat in flight is
// let finish (so that none lands after Leave's) unless the Board did not
// answer the last call, so that Close is short when MongoDB is down. It
// writes nothing: call Leave after the stores are closed.
func (f *Follower) Close() {
	if f.Status().BoardErr != "" {
		f.stopBeats()
	}
	f.stopLife()
	if f.started.Load() {
		<-f.done
	}
}

// Status returns a snapshot.
func (f *Follower) Status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

// SetDraining marks the instance as shutting down and reports it at once.
func (f *Follower) SetDraining() {
	f.mu.Lock()
	f.status.Draining = true
	f.mu.Unlock()
	select {
	case f.beatNow <- struct{}{}:
	default:
	}
}

func (f *Follower) loop() {
	defer close(f.done)
	poll := f.clock.NewTimer(f.cfg.PollInterval)
	beat := f.clock.NewTimer(f.cfg.HeartbeatInterval)
	defer func() { poll.Stop(); beat.Stop() }()
	for {
		select {
		case <-f.life.Done():
			return
		case <-poll.C():
			f.Poll(f.life)
			poll = f.clock.NewTimer(f.cfg.PollInterval)
		case <-beat.C():
			began := f.clock.Now()
			f.beat(f.beats)
			// On cadence: the beat's own time comes out of the interval.
			beat = f.clock.NewTimer(max(f.cfg.HeartbeatInterval-f.clock.Now().Sub(began), 0))
		case <-f.beatNow:
			f.beat(f.beats)
		}
		if f.life.Err() != nil { // Close came during the beat: no other
			return
		}
	}
}

// Poll reads the Document and applies it if this instance does not run it
// yet. The Follower polls by itself; call Poll to follow now.
func (f *Follower) Poll(ctx context.Context) {
	if f.Status().Detached {
		doc, err := f.load(ctx)
		if err == nil {
			err = f.join(ctx, doc)
		}
		if errors.Is(err, ErrConfig) {
			_ = f.boardDone(err) // kept in Status.BoardErr while detached
		}
		return
	}
	doc, err := f.load(ctx)
	if err != nil {
		return
	}
	if st := f.Status(); st.Lag == "" && st.Generation == doc.Generation {
		f.setPolled(doc)
		return
	}
	_ = f.apply(ctx, doc)
}

func (f *Follower) setPolled(doc Document) {
	f.mu.Lock()
	f.status.Document, f.status.Polled = doc, f.clock.Now()
	f.mu.Unlock()
}

// apply runs doc's stage on the Target, or records why it could not.
// Applications are serialized so that the status follows the last.
func (f *Follower) apply(ctx context.Context, doc Document) error {
	from, err := f.applyLocked(ctx, doc)
	if err != nil {
		f.log.Warn("control: the stage document is not applied yet; retrying at the next poll",
			slog.Uint64("generation", doc.Generation), slog.String("stage", doc.Stage.String()), slog.String("error", err.Error()))
		return err
	}
	if from != doc.Stage {
		f.log.Info("control: following the stage document",
			slog.Uint64("generation", doc.Generation), slog.String("from", from.String()), slog.String("to", doc.Stage.String()))
	}
	return nil
}

func (f *Follower) applyLocked(ctx context.Context, doc Document) (from dualwrite.Stage, err error) {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	f.setPolled(doc)
	err = f.cfg.Target.Apply(ctx, doc.Stage)
	f.mu.Lock()
	defer f.mu.Unlock()
	from = f.status.Stage
	if err != nil {
		f.status.Lag = fmt.Sprintf("generation %d (%s) not applied: %v", doc.Generation, doc.Stage, err)
	} else {
		f.status.Lag, f.status.Generation, f.status.Stage = "", doc.Generation, doc.Stage
	}
	return from, err
}

// report is the instance's heartbeat now. The Target's Report has half a
// heartbeat interval, so that a live instance is never taken for dead
// (dualwrite's Confirmation).
func (f *Follower) report(ctx context.Context) Heartbeat {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.HeartbeatInterval/2)
	defer cancel()
	h := f.cfg.Target.Report(ctx)
	st := f.Status()
	h.Instance, h.Generation, h.Stage, h.At = f.cfg.Instance, st.Generation, st.Stage, f.clock.Now()
	h.Draining, h.Lag = st.Draining, st.Lag
	return h
}

// beat writes the heartbeat. Close does not cut it short: a write the
// client gives up on may still be applied by the server after Leave's.
func (f *Follower) beat(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.BoardTimeout)
	defer cancel()
	h := f.report(ctx)
	f.boardDone(f.cfg.Board.Beat(ctx, h))
	f.peers(ctx)
}

// Leave writes the instance's last heartbeat, after its stores are closed,
// with h's counts: it removes the heartbeat if h is settled, else marks it
// stopped, so that a flip waits until the keys it left are settled.
func (f *Follower) Leave(ctx context.Context, h Heartbeat) error {
	f.Close()
	ctx, cancel := context.WithTimeout(ctx, f.cfg.BoardTimeout)
	defer cancel()
	if h.Settled() {
		return f.boardDone(f.cfg.Board.Forget(ctx, f.cfg.Instance))
	}
	st := f.Status()
	h.Instance, h.Generation, h.Stage, h.At = f.cfg.Instance, st.Generation, st.Stage, f.clock.Now()
	h.Draining, h.Stopped, h.Lag = true, true, st.Lag
	return f.boardDone(f.cfg.Board.Beat(ctx, h))
}

func (f *Follower) load(ctx context.Context) (Document, error) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.BoardTimeout)
	defer cancel()
	doc, err := f.cfg.Board.Load(ctx)
	return doc, f.boardDone(err)
}

func (f *Follower) swap(ctx context.Context, expect uint64, next Document) error {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.BoardTimeout)
	defer cancel()
	err := f.cfg.Board.Swap(ctx, expect, next)
	if errors.Is(err, ErrConflict) {
		return err
	}
	return f.boardDone(err)
}

func (f *Follower) boardDone(err error) error {
	if err != nil && f.life.Err() != nil && errors.Is(err, context.Canceled) {
		return err // a call Close ended: no news of the Board
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	f.mu.Lock()
	was, detached := f.status.BoardErr, f.status.Detached
	f.status.BoardErr = msg
	f.mu.Unlock()
	// Detached, the caller said it at start.
	if err != nil && was == "" && !detached {
		f.log.Warn("control: the control board cannot be reached", slog.String("error", msg))
	}
	return err
}
