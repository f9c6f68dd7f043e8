package assembly

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/dualwrite/dualwriteotel"
	"github.com/kvshadow/kvshadow/internal/storeerr"
	"github.com/kvshadow/kvshadow/journal"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/otelkv"
)

// Who names the program in what the assembly says.
type Who struct {
	Name       string // the messages' prefix: "kvshadow-proxy", "botkv"
	Self       string // what it calls itself: "instance", "bot"
	JournalDir string // the setting of the journal directory: "--journal-dir", "KVSHADOW_JOURNAL_DIR"
}

// Config is what Start assembles.
type Config struct {
	Who Who
	// Backends are the stores and the board; Start owns them (Close
	// closes them, as does a failed Start).
	Backends *Backends
	// Store is every namespace's dualwrite.Config but for Primary, Shadow,
	// Journal and Fleet, which Start sets; its Stage is the stage
	// written when the board has no stage document yet.
	Store   dualwrite.Config
	Options []dualwrite.Option
	// Instance names the instance on the control board (required).
	Instance string
	// JournalDir holds a settle journal per namespace (<namespace>.journal)
	// and the stage the instance runs (control.KeepStage); "" keeps them
	// in memory.
	JournalDir string
	// Poll and Beat are the Follower's intervals; zero means control's.
	Poll, Beat time.Duration
	// SweepInterval is the shadow's sweep's; zero means mongokv's.
	SweepInterval time.Duration
	// NewPairing waives control.Read's refusals of another pairing and of
	// a first start past shadow (kvshadow-proxy's --new-pairing).
	NewPairing bool
	// RequireStage makes a start that cannot read the stage document and
	// has no stage it may serve without it fail (ErrMongoDBDown); otherwise
	// it serves nothing (Gated) until the document is read.
	RequireStage bool
	Tracer       trace.TracerProvider // nil: the global one
	Meter        metric.MeterProvider // nil: the global one
	Logger       *slog.Logger         // nil: slog.Default()
	Clock        clock.Clock          // the stores'; nil: the system's
}

// StartWait bounds Start's reads of the stores and of the stage document:
// past MongoDB's server selection timeout (5 s), so that a server that
// cannot be reached is said to be unreachable, and why, rather than slow.
const StartWait = 8 * time.Second

// closeWait bounds the last goodbyes to MongoDB at Close (the heartbeat's,
// the clients' disconnects): short, since what they would say is kept in
// the journal anyway.
const closeWait = 2 * time.Second

// ErrMongoDBDown matches Start's error when the stage document cannot be
// read and the instance has no stage it may serve without it, with
// Config.RequireStage.
var ErrMongoDBDown = errors.New("MongoDB cannot be reached at start")

// Assembly is what serves an instance's namespaces.
type Assembly struct {
	Namespaces []*Served
	Follower   *control.Follower
	Stores     *control.Stores
	Backends   *Backends
	// Gated: the stage document could not be read at start and no stage
	// may be served without it: serve nothing until Follower joins.
	Gated bool

	cfg      Config
	log      *slog.Logger
	doc      control.Document // the stage document read at start
	boardErr error            // why it could not be read
	journals []*journal.Journal
	first    *dualwriteotel.Observer
	reg      metric.Registration
	stopSw   func()
	drained  bool
	closed   bool
}

// Served is one namespace: its two stores and the dual-write store over
// them.
type Served struct {
	ID    string
	Sides Sides
	Dual  *dualwrite.Store
	Front kv.Store // Dual, instrumented for the callers' spans
}

// ProbeKey is the key the start and readiness probes read: a miss is the
// expected answer, one request what it costs.
const ProbeKey = "kvshadow-readiness-probe"

// Read reads ProbeKey from the store of role, directly (not through the
// dual-write store, which would copy or compare); a miss is an answer.
func (s *Served) Read(ctx context.Context, role dualwrite.Role) error {
	st := s.Sides.Primary
	if role == dualwrite.RoleShadow {
		st = s.Sides.Shadow
	}
	if _, err := st.Get(ctx, ProbeKey); err != nil && !errors.Is(err, kv.ErrNotFound) {
		return err
	}
	return nil
}

// Describe words the failure err of the store of role in one line: where
// it is and what its error means (storeerr). A nil err gives the name
// alone, ready for a verb ("MongoDB at h: ").
func (s *Served) Describe(role dualwrite.Role, err error) string {
	where, system := cmp.Or(s.Sides.PrimaryAt, "the primary"), s.Sides.PrimarySystem
	if role == dualwrite.RoleShadow {
		where, system = cmp.Or(s.Sides.ShadowAt, "the shadow"), s.Sides.ShadowSystem
	}
	switch {
	case err == nil:
		return where + ": "
	case role == dualwrite.RoleShadow && cmp.Or(system, otelkv.SystemMongoDB) == otelkv.SystemMongoDB:
		return where + ": " + storeerr.MongoDB(err)
	case role == dualwrite.RoleShadow:
		return where + ": " + mongokv.ShortTopology(err.Error())
	case cmp.Or(system, otelkv.SystemCloudflareKV) == otelkv.SystemCloudflareKV:
		return where + ": " + storeerr.WorkersKV(err)
	}
	return where + ": " + err.Error()
}

// Start reads every store once and the stage document, as the package
// doc's "The start" says, then builds every namespace's store with its
// journal, telemetry and Fleet, the sweepers and the Follower, which Follow
// starts.
func Start(ctx context.Context, cfg Config) (_ *Assembly, err error) {
	b := cfg.Backends
	a := &Assembly{cfg: cfg, Backends: b, log: cmp.Or(cfg.Logger, slog.Default()), stopSw: func() {}}
	defer func() {
		if err != nil {
			err = errors.Join(err, a.Close(context.WithoutCancel(ctx)))
		}
	}()
	if len(b.Sides) == 0 || b.Board == nil {
		return nil, fmt.Errorf("assembly: the backends hold %d namespaces, board %v", len(b.Sides), b.Board != nil)
	}
	ccfg := control.Config{Board: b.Board, Instance: cfg.Instance, Initial: cfg.Store.Stage, PollInterval: cfg.Poll, HeartbeatInterval: cfg.Beat,
		Pairing: b.Pairing, NewPairing: cfg.NewPairing}
	exclude, err := kv.NewExclusions(cfg.Store.ExcludePrefixes)
	if err != nil {
		return nil, err
	}
	for _, sd := range b.Sides {
		a.Namespaces = append(a.Namespaces, &Served{ID: sd.ID, Sides: sd})
		ccfg.Stores = append(ccfg.Stores, control.Sides{Primary: sd.Primary, Shadow: sd.Shadow, Exclude: exclude})
	}
	answers := make(chan []Answer, 1)
	go func() { answers <- Probe(ctx, a.Namespaces, true) }()
	lctx, cancel := context.WithTimeout(ctx, control.DefaultBoardTimeout)
	a.doc, a.boardErr = control.Read(lctx, ccfg) // before any store is built: see its refusals
	cancel()
	probed := <-answers
	if err := refused(probed); err != nil {
		return nil, err
	}
	if errors.Is(a.boardErr, control.ErrConfig) {
		return nil, a.boardErr
	}
	if a.boardErr != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%s: reading the stage document: %w", cfg.Who.Name, ctx.Err())
	}
	stage := cfg.Store.Stage
	if a.boardErr == nil && a.doc.Generation > 0 {
		stage = a.doc.Stage
	}
	if a.boardErr != nil {
		if stage, err = a.detached(probed); err != nil {
			return nil, err
		}
	}
	a.say(probed)
	if err := a.build(stage); err != nil {
		return nil, err
	}
	ccfg.Target = a.Stores
	a.Follower, err = control.NewFollower(ccfg, control.WithLogger(a.log))
	if err != nil {
		return nil, err
	}
	a.stopSw = sweep(b.Sides, cmp.Or(cfg.SweepInterval, mongokv.DefaultSweepInterval), a.log, cfg.Who.Name)
	return a, nil
}

// Answer is one store's answer to a probe.
type Answer struct {
	Served *Served
	Role   dualwrite.Role
	Where  string // Describe's words
	Err    error
}

// Probe reads ProbeKey from every store once, all at once, each within
// StartWait: two answers a namespace. With connect, a store that connects
// on demand is connected first, so that the failure is the probe's to say.
func Probe(ctx context.Context, all []*Served, connect bool) []Answer {
	out := make([]Answer, 2*len(all))
	var wg sync.WaitGroup
	for i, s := range all {
		for j, role := range []dualwrite.Role{dualwrite.RolePrimary, dualwrite.RoleShadow} {
			wg.Go(func() {
				pctx, cancel := context.WithTimeout(ctx, StartWait)
				defer cancel()
				var err error
				if c, ok := s.Sides.Shadow.(interface{ Connect(context.Context) error }); ok && connect && role == dualwrite.RoleShadow {
					err = c.Connect(pctx)
				}
				if err == nil {
					err = s.Read(pctx, role)
				}
				out[2*i+j] = Answer{Served: s, Role: role, Where: s.Describe(role, err), Err: err}
			})
		}
	}
	wg.Wait()
	return out
}

// SettingsError is every store that refused the settings at start (a
// token, an account, a namespace, MongoDB's credentials): the environment
// is wrong, which a restart does not mend.
type SettingsError struct {
	Lines    []string // one a store, in the probe's words
	Settings []string // the setting each points at (storeerr.Setting), or ""
}

func (e *SettingsError) Error() string { return strings.Join(e.Lines, "\n") }

func refused(as []Answer) error {
	e := &SettingsError{}
	for _, a := range as {
		if storeerr.Refused(a.Err) && !slices.Contains(e.Lines, a.Where) {
			e.Lines, e.Settings = append(e.Lines, a.Where), append(e.Settings, storeerr.Setting(a.Err))
		}
	}
	if len(e.Lines) > 0 {
		return e
	}
	return nil
}

// say logs each answer in one line, once however many namespaces share
// the store; with the board down, MongoDB's is the detached start's line.
func (a *Assembly) say(as []Answer) {
	var said []string
	for _, an := range as {
		if slices.Contains(said, an.Where) || a.boardErr != nil && an.Role == dualwrite.RoleShadow && an.Err != nil {
			continue
		}
		said = append(said, an.Where)
		if an.Err == nil {
			a.log.Info(a.cfg.Who.Name + ": " + an.Where + "answers")
		} else {
			a.log.Warn(a.cfg.Who.Name + ": " + an.Where)
		}
	}
}

// detached decides the stage of a start that could not read the stage
// document (see the package doc's "The start"), and says which in one line.
func (a *Assembly) detached(as []Answer) (dualwrite.Stage, error) {
	w, dir := a.cfg.Who, a.cfg.JournalDir
	down, up, cause := a.Namespaces[0].Describe(dualwrite.RoleShadow, a.boardErr), true, a.boardErr
	for _, an := range as {
		if an.Role == dualwrite.RoleShadow && an.Err != nil {
			down, up, cause = an.Where, false, an.Err // mongokv's: kv.ErrUnavailable for an outage
			break
		}
	}
	if up {
		down = cmp.Or(a.Namespaces[0].Sides.ShadowAt, "MongoDB") + " answers, but " + storeerr.MongoRead(a.boardErr)
	}
	why := w.Name + ": " + down + ": the control board (the stage document) cannot be read"
	next := "once MongoDB answers, the " + w.Self + " joins the control board and follows the stage document"
	last, known := control.LastStage(dir)
	var then string
	switch {
	case known && control.ServesDetached(last):
		copies := "copies to MongoDB fail and their keys stay dirty until they are repaired"
		if up {
			copies = "copies to MongoDB go on"
		}
		a.log.Warn(why + ": serving in " + last.String() + ", the last stage this " + w.Self + " ran (kept in " + filepath.Join(dir, control.StageFile) +
			"), in which Workers KV is authoritative; " + copies + "; " + next + " (writing " + last.String() + " if there is none yet)")
		return last, nil
	case known:
		then = "the last stage this " + w.Self + " ran is " + last.String() + ", in which MongoDB is authoritative"
	case dir == "":
		then = "without " + w.JournalDir + " this " + w.Self + " keeps no stage of its own"
	default:
		then = dir + " (" + w.JournalDir + ") holds no stage this " + w.Self + " ran"
	}
	if a.cfg.RequireStage {
		return 0, &downError{msg: why + ": " + then + ": start the " + w.Self + " once MongoDB answers", cause: cause}
	}
	a.log.Warn(why + ": " + then + ": serving nothing (503) until the stage document can be read; " + next)
	a.Gated = true
	return cmp.Or(last, a.cfg.Store.Stage), nil
}

// downError matches ErrMongoDBDown and its cause (kv.ErrUnavailable for an
// outage).
type downError struct {
	msg   string
	cause error
}

func (e *downError) Error() string   { return e.msg }
func (e *downError) Unwrap() []error { return []error{ErrMongoDBDown, e.cause} }

// build opens the journals and builds every namespace's store in stage.
func (a *Assembly) build(stage dualwrite.Stage) error {
	cfg, w := a.cfg, a.cfg.Who
	if cfg.JournalDir == "" {
		a.log.Warn(w.Name + ": no " + w.JournalDir + ": the keys not yet settled live in memory, and a crash loses track of them until a full shadow-report")
	} else if err := os.MkdirAll(cfg.JournalDir, 0o700); err != nil {
		return &JournalError{Err: err}
	}
	a.Stores = control.NewStores(a.Backends.Board, cfg.JournalDir, a.log)
	tp, mp := dualwriteotel.WithTracerProvider(cfg.Tracer), dualwriteotel.WithMeterProvider(cfg.Meter)
	for _, s := range a.Namespaces {
		c := cfg.Store
		c.Stage, c.Fleet = stage, a.Stores.Fleet().Namespace(s.ID)
		if stage.ShadowAuthoritative() {
			// MongoDB became authoritative before this start: a late copy
			// acknowledged a fence interval after it is not credible.
			c.AuthoritativeSince = clock.OrReal(cfg.Clock).Now()
		}
		if cfg.JournalDir != "" {
			j, err := journal.Open(filepath.Join(cfg.JournalDir, s.ID+".journal"), journal.Options{})
			if err != nil {
				return &JournalError{Err: fmt.Errorf("the settle journal of namespace %s: %w", s.ID, err)}
			}
			a.journals, c.Journal = append(a.journals, j), j
		}
		c.Primary, c.Shadow = s.Sides.Primary, s.Sides.Shadow
		opts := append([]dualwrite.Option{dualwrite.WithLogger(a.log.With(slog.String("kv_namespace", s.ID)))}, cfg.Options...)
		st, err := dualwriteotel.NewStore(c, dualwriteotel.Config{PrimarySystem: s.Sides.PrimarySystem, ShadowSystem: s.Sides.ShadowSystem, Unwatched: true},
			tp, mp, dualwriteotel.WithStoreOptions(opts...))
		if err != nil {
			return fmt.Errorf("namespace %s: %w", s.ID, err)
		}
		s.Dual, s.Front = st.Dual, st.KV
		a.Stores.Add(s.ID, s.Dual)
		if a.first == nil {
			a.first = st.Observer
		}
	}
	return nil
}

// JournalError is a journal directory or file that cannot be used.
type JournalError struct{ Err error }

func (e *JournalError) Error() string { return e.Err.Error() }
func (e *JournalError) Unwrap() error { return e.Err }

// Watch reports the gauges of every store from src (one callback for the
// whole instance, so that several namespaces never observe one series
// twice) until Drain.
func (a *Assembly) Watch(src dualwriteotel.StatsSource) error {
	reg, err := a.first.Watch(src)
	a.reg = reg
	return err
}

// Follow starts the Follower: from the stage document read at start, or,
// without it, detached (control.Follower.StartDetached).
func (a *Assembly) Follow(ctx context.Context) error {
	var err error
	if a.boardErr != nil {
		err = a.Follower.StartDetached(a.Namespaces[0].Dual.Stage(), errors.New(storeerr.MongoDB(a.boardErr)))
	} else {
		err = a.Follower.StartFrom(ctx, a.doc)
	}
	if err != nil {
		return fmt.Errorf("following the stage document: %w", err)
	}
	return nil
}

// Drain marks the instance draining on the board, then closes every store
// (see the package doc's "The end"), and stops the gauges.
func (a *Assembly) Drain(ctx context.Context) error {
	if a.drained {
		return nil
	}
	a.drained = true
	if a.Follower != nil {
		a.Follower.SetDraining()
		var cancel context.CancelFunc
		ctx, cancel = a.bounded(ctx)
		defer cancel()
	}
	var errs []error
	for _, s := range a.Namespaces {
		if s.Dual != nil {
			if err := s.Dual.Close(ctx); err != nil {
				errs = append(errs, fmt.Errorf("namespace %s: %w", s.ID, err))
			}
		}
	}
	if a.reg != nil {
		errs = append(errs, a.reg.Unregister())
	}
	return errors.Join(errs...)
}

// bounded is ctx, within closeWait when the board did not answer lately.
func (a *Assembly) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if st := a.Follower.Status(); st.Detached || st.BoardErr != "" {
		return context.WithTimeout(ctx, closeWait)
	}
	return ctx, func() {}
}

// Leave writes the instance's last heartbeat, after Drain, within
// closeWait when the board did not answer lately.
func (a *Assembly) Leave(ctx context.Context) error {
	a.Follower.Close()
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	return a.Follower.Leave(ctx, a.Stores.Left())
}

// Close releases what Drain has not (the Follower, the journals, the
// sweepers, the backends), once.
func (a *Assembly) Close(ctx context.Context) error {
	if a.closed {
		return nil
	}
	a.closed = true
	errs := []error{a.Drain(ctx)}
	if a.Follower != nil {
		a.Follower.Close()
	}
	for _, j := range a.journals {
		errs = append(errs, j.Close())
	}
	a.stopSw()
	return errors.Join(append(errs, a.Backends.Close(ctx))...)
}

// sweep runs one sweeper per shadow database the namespaces use (mongokv's
// RunSweeper), until stop, which waits.
func sweep(sides []Sides, interval time.Duration, log *slog.Logger, who string) (stop func()) {
	type sweeper interface {
		RunSweeper(ctx context.Context, interval time.Duration) error
		Database() string
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	seen := map[string]bool{}
	for _, sd := range sides {
		sw, ok := sd.Shadow.(sweeper)
		if !ok || seen[sw.Database()] {
			continue
		}
		seen[sw.Database()] = true
		wg.Go(func() {
			err := sw.RunSweeper(ctx, interval)
			if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, kv.ErrClosed) {
				log.Warn(who+": the chunk sweeper stopped", slog.String("database", sw.Database()), slog.String("error", err.Error()))
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}
