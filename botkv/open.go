package botkv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/dualwrite/dualwriteotel"
	"github.com/kvshadow/kvshadow/internal/storeerr"
	"github.com/kvshadow/kvshadow/journal"
	"github.com/kvshadow/kvshadow/kv"
)

// connectTimeout bounds Open's connect to MongoDB and its read of the
// stage document, as kvshadow-proxy's: past it, Open starts detached or
// fails.
const connectTimeout = 15 * time.Second

// Option sets a piece of plumbing.
type Option func(*plumbing)

type plumbing struct {
	logger *slog.Logger
	tp     trace.TracerProvider
	mp     metric.MeterProvider
}

// plumb applies opts over the defaults: slog.Default() as the logger.
func plumb(opts []Option) plumbing {
	var p plumbing
	for _, o := range opts {
		if o != nil {
			o(&p)
		}
	}
	if p.logger == nil {
		p.logger = slog.Default()
	}
	return p
}

// WithLogger sets the logger of the store, the stage's follower and
// Adapter's unreadable JSON records. The default is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(p *plumbing) { p.logger = l } }

// WithTracerProvider sets the tracer provider; the default is the global
// one (a no-op until the program installs an SDK).
func WithTracerProvider(tp trace.TracerProvider) Option { return func(p *plumbing) { p.tp = tp } }

// WithMeterProvider sets the meter provider; the default is the global one.
func WithMeterProvider(mp metric.MeterProvider) Option { return func(p *plumbing) { p.mp = mp } }

// Store is the production store of a Go bot: Workers KV authoritative
// (then MongoDB, as the stage moves), both instrumented, on the stage
// kvshadow's control board says.
type Store struct {
	// KV is what the bot uses in place of its store (or wraps in an
	// Adapter): the dual-write store, instrumented.
	KV kv.Store
	// Dual is the dual-write store itself: Stats, DirtyKeys, WaitSettled.
	Dual *dualwrite.Store

	log      *slog.Logger
	mp       metric.MeterProvider
	otel     *dualwriteotel.Store
	follower *control.Follower
	closers  []func(context.Context) error // last first
}

// Open builds the store from the environment kvshadow-proxy reads (see
// the package's table): Workers KV through cfkv as the primary, MongoDB
// through mongokv as the shadow (database MONGODB_DB, "miti99bot" by
// default), the dual-write store between them with its breaker, its
// telemetry (dualwriteotel), its settle journal (KVSHADOW_JOURNAL_DIR),
// the shadow's sweeper (mongokv.Store.RunSweeper), and a control.Follower that keeps it on the stage of the control
// document in the shadow database, with a heartbeat, as every
// kvshadow-proxy instance does: the operator moves the bot's stage with
// the proxy's admin API or any instance of the fleet.
//
// A variable missing or wrong fails Open before any I/O with an error
// matching ErrConfig that names it (*VarError). Open then connects to
// MongoDB and reads the control document (within ctx and 15 s): the store
// starts in the document's stage, or, when there is none yet, in
// KVSHADOW_STAGE (default off). When MongoDB does not answer, or the stage
// document cannot be read, within those 15 s, Open starts detached in the
// stage the bot last ran, kept in KVSHADOW_JOURNAL_DIR, if Workers KV is
// authoritative in it (off to handover), and otherwise fails with an error
// matching ErrMongoDBDown (see "Starting with MongoDB down" in the
// package's doc). Close releases everything Open started.
func Open(ctx context.Context, cfg Config, opts ...Option) (_ *Store, err error) {
	p := plumb(opts)
	set, err := cfg.read()
	if err != nil {
		return nil, err
	}
	s := &Store{log: p.logger, mp: p.mp}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.release(context.WithoutCancel(ctx)))
		}
	}()
	if set.primary.HTTPClient == nil {
		// The store's own transport, so that Close can end its idle
		// connections' goroutines: a bot's tests open and close many.
		t := cfkv.NewTransport()
		set.primary.HTTPClient = &http.Client{Transport: t}
		s.closers = append(s.closers, func(context.Context) error { t.CloseIdleConnections(); return nil })
	}
	primary, err := cfkv.New(set.primary)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	client, err := mongokv.NewClient(mongokv.ClientConfig{URI: set.mongoURI, Logger: p.logger})
	if err != nil {
		return nil, &VarError{Name: EnvMongoURI, Problem: err.Error()}
	}
	s.closers = append(s.closers, client.Close)
	shadow, err := client.Store(mongokv.Config{Database: set.database})
	if err != nil {
		return nil, &VarError{Name: EnvMongoDB, Problem: err.Error()}
	}
	if named := client.URIDatabase(); named != "" && named != set.database {
		p.logger.Warn(fmt.Sprintf("botkv: %s names the database %q, but the shadow is %q (%s, or %s by default); set %s=%s if the bot's data is there",
			EnvMongoURI, named, set.database, EnvMongoDB, mongokv.DefaultDatabase, EnvMongoDB, named))
	}
	// The board has a driver client of its own, as kvshadow-proxy's.
	boardClient, err := mongo.Connect(options.Client().ApplyURI(set.mongoURI).SetServerSelectionTimeout(mongokv.DefaultServerSelectionTimeout))
	if err != nil {
		return nil, &VarError{Name: EnvMongoURI, Problem: "the driver refuses the URI"}
	}
	s.closers = append(s.closers, boardClient.Disconnect)
	board := control.NewMongoBoard(boardClient.Database(set.database))
	stage, boardErr := set.stage, error(nil)
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	connected := false
	if boardErr = client.Connect(cctx); boardErr == nil {
		connected = true
		var doc control.Document
		if doc, boardErr = board.Load(cctx); boardErr == nil && doc.Generation > 0 {
			stage = doc.Stage
		}
	}
	if boardErr != nil {
		if stage, err = s.detached(ctx, set, startFailure{err: boardErr, connected: connected}); err != nil {
			return nil, err
		}
	}
	s.sweep(shadow)

	// The other instances' watermarks, from the heartbeats, as
	// kvshadow-proxy's stores have them (see dualwrite's Confirmation).
	fleet := control.NewFleet(board)
	dcfg := dualwrite.Config{Primary: primary, Shadow: shadow, Stage: stage,
		CompareRate: set.rate, ConsistencyWindow: set.window, Fleet: fleet.Namespace(set.primary.NamespaceID)}
	if dcfg.Journal, err = s.openJournal(set); err != nil {
		return nil, err
	}
	var key []byte
	if set.keySecret != "" {
		key = []byte(set.keySecret)
	}
	if dcfg.Redactor, err = compare.NewRedactor(compare.KeyHMAC, key); err != nil {
		return nil, &VarError{Name: EnvKeySecret, Problem: err.Error()}
	}
	s.otel, err = dualwriteotel.NewStore(dcfg, dualwriteotel.Config{}, dualwriteotel.WithTracerProvider(p.tp),
		dualwriteotel.WithMeterProvider(p.mp), dualwriteotel.WithStoreOptions(dualwrite.WithLogger(p.logger)))
	if err != nil {
		return nil, err
	}
	s.KV, s.Dual = s.otel.KV, s.otel.Dual
	tgt := target{dual: s.Dual, ns: set.primary.NamespaceID, dir: set.journalDir, log: p.logger}
	s.follower, err = control.NewFollower(control.Config{Board: board, Target: tgt, Instance: set.instance, Initial: set.stage, Fleet: fleet},
		control.WithLogger(p.logger))
	if err != nil {
		return nil, err
	}
	if boardErr != nil {
		err = s.follower.StartDetached(stage, errors.New(storeerr.MongoDB(boardErr)))
	} else {
		err = s.follower.Start(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("botkv: following the stage document: %w", err)
	}
	return s, nil
}

// startFailure is why Open could not read the stage document: err, and
// whether the connect to MongoDB worked (then the read failed: the copies
// go on meanwhile).
type startFailure struct {
	err       error
	connected bool
}

// what says what failed, hosts only, and why.
func (f startFailure) what(uri string) string {
	if f.connected {
		return "botkv: MongoDB answers but the stage document cannot be read at start (" + EnvMongoURI + "'s " + storeerr.MongoHosts(uri) + ": " + storeerr.MongoRead(f.err) + ")"
	}
	return ErrMongoDBDown.Error() + " (" + EnvMongoURI + "'s " + storeerr.MongoHosts(uri) + ": " + storeerr.MongoDB(f.err) + ")"
}

// meanwhile says what becomes of the copies to MongoDB while detached,
// and what the bot does next.
func (f startFailure) meanwhile() string {
	if f.connected {
		return "copies to MongoDB go on; once the stage document can be read"
	}
	return "copies to MongoDB fail and their keys stay dirty until they are repaired; once MongoDB answers"
}

// detached decides what Open does when it could not read the stage
// document at start (f): run the stage the bot last ran, kept in
// KVSHADOW_JOURNAL_DIR, when Workers KV is authoritative in it
// (control.ServesDetached), as kvshadow-proxy does; otherwise fail with
// ErrMongoDBDown, saying why. A refused login is the URI's fault, not an
// outage, and the caller's ctx ending is the caller's: both fail Open.
func (s *Store) detached(ctx context.Context, set settings, f startFailure) (dualwrite.Stage, error) {
	boardErr, what := f.err, f.what(set.mongoURI)
	switch {
	case ctx.Err() != nil:
		return 0, fmt.Errorf("botkv: connecting to MongoDB (%s): %w", EnvMongoURI, ctx.Err())
	case storeerr.Refused(boardErr):
		return 0, &VarError{Name: EnvMongoURI, Problem: storeerr.MongoDB(boardErr)}
	}
	last, known := control.LastStage(set.journalDir)
	var then string
	switch {
	case known && control.ServesDetached(last):
		s.log.Warn(what + ": serving in " + last.String() + ", the last stage this bot ran (kept in " + filepath.Join(set.journalDir, control.StageFile) +
			"), in which Workers KV is authoritative; " + f.meanwhile() + ", the bot joins the control board and follows the stage document (writing " +
			last.String() + " if there is none yet)")
		return last, nil
	case known:
		then = "the last stage this bot ran is " + last.String() + ", in which MongoDB is authoritative, so it runs only the stage document's: start the bot once MongoDB answers"
	case set.journalDir == "":
		then = "without " + EnvJournalDir + " the bot keeps no stage of its own to run meanwhile: start the bot once MongoDB answers, and set " + EnvJournalDir + " for the next start"
	default:
		then = set.journalDir + " (" + EnvJournalDir + ") holds no stage this bot ran: start the bot once MongoDB answers"
	}
	return 0, &downError{msg: what + ": " + then, cause: boardErr}
}

// downError is Open's error when MongoDB does not answer at start and the
// bot has no stage to run meanwhile: one line, which matches
// ErrMongoDBDown and the cause (kv.ErrUnavailable for an outage).
type downError struct {
	msg   string
	cause error
}

func (e *downError) Error() string   { return e.msg }
func (e *downError) Unwrap() []error { return []error{ErrMongoDBDown, e.cause} }

// sweep runs the shadow's sweeper until Close, as kvshadow-proxy does:
// expired documents where the server has no TTL index, and the chunks of
// large values deleted, overwritten or cut short.
func (s *Store) sweep(shadow *mongokv.Store) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := shadow.RunSweeper(ctx, mongokv.DefaultSweepInterval)
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, kv.ErrClosed) {
			s.log.Warn("botkv: the shadow's sweeper stopped", slog.String("error", err.Error()))
		}
	}()
	s.closers = append(s.closers, func(context.Context) error { stop(); <-done; return nil })
}

// openJournal opens the settle journal in KVSHADOW_JOURNAL_DIR, named
// after the namespace as kvshadow-proxy names its own.
func (s *Store) openJournal(set settings) (dualwrite.Journal, error) {
	if set.journalDir == "" {
		s.log.Warn("botkv: no " + EnvJournalDir + ": the keys not yet settled live in memory, and a crash loses track of them until a full shadow-report")
		return nil, nil
	}
	if err := os.MkdirAll(set.journalDir, 0o700); err != nil {
		return nil, &VarError{Name: EnvJournalDir, Problem: err.Error()}
	}
	j, err := journal.Open(filepath.Join(set.journalDir, set.primary.NamespaceID+".journal"), journal.Options{})
	if err != nil {
		return nil, &VarError{Name: EnvJournalDir, Problem: err.Error()}
	}
	s.closers = append(s.closers, func(context.Context) error { return j.Close() })
	return j, nil
}

// Stage is the stage the store runs.
func (s *Store) Stage() dualwrite.Stage { return s.Dual.Stage() }

// Detached reports whether the store runs without having read the stage
// document: Open found MongoDB down and started in the stage the bot last
// ran, and the stage document has not been read since.
func (s *Store) Detached() bool { return s.follower.Status().Detached }

// WaitSettled waits until every key written so far is settled, or ctx
// ends: see dualwrite.Store.WaitSettled.
func (s *Store) WaitSettled(ctx context.Context) (dualwrite.Left, error) {
	return s.Dual.WaitSettled(ctx)
}

// Close stops following the stage, drains the lanes until ctx ends (what
// they could not copy stays dirty, in the journal when there is one),
// leaves the control board with the store's last heartbeat, and releases
// the connections and the journal. Every goroutine Open started has
// stopped when it returns.
func (s *Store) Close(ctx context.Context) error {
	if s.otel == nil {
		return nil // closed already
	}
	s.follower.SetDraining()
	err := s.otel.Close(ctx)
	s.otel = nil
	st := s.Dual.Stats()
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), control.DefaultBoardTimeout)
	defer cancel()
	if lerr := s.follower.Leave(lctx, control.Heartbeat{Dirty: st.Dirty, Unsettled: st.Unsettled, ReconciliationNeeded: st.ReconciliationNeeded}); lerr != nil {
		s.log.Warn("botkv: could not leave the control board", slog.String("error", lerr.Error()))
	}
	return errors.Join(err, s.release(lctx))
}

// release stops the follower and the store (when Close has not) and runs
// the closers, last first.
func (s *Store) release(ctx context.Context) error {
	if s.follower != nil {
		s.follower.Close()
	}
	var errs []error
	if s.otel != nil {
		errs = append(errs, s.otel.Close(ctx))
		s.otel = nil
	}
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i](ctx))
	}
	s.closers = nil
	return errors.Join(errs...)
}

// target is the Follower's control.Target: the one dual-write store.
type target struct {
	dual *dualwrite.Store
	ns   string // the Workers KV namespace ID, as heartbeats name it
	dir  string // KVSHADOW_JOURNAL_DIR, where the stage is kept; "" keeps none
	log  *slog.Logger
}

var (
	_ control.Target    = target{}
	_ control.PeerAware = target{}
)

// Apply walks the store to stage one step at a time (a bot that started
// without MongoDB may find the document moved on) and keeps the stage in
// the journal directory, for a start without MongoDB, as kvshadow-proxy
// does.
func (t target) Apply(ctx context.Context, stage dualwrite.Stage) error {
	if err := control.Walk(ctx, t.dual, stage); err != nil {
		return err
	}
	if err := control.KeepStage(t.dir, stage); err != nil {
		t.log.Warn("botkv: cannot keep the stage in "+EnvJournalDir+"; a start without MongoDB will not know it",
			slog.String("error", err.Error()))
	}
	return nil
}

func (t target) SetPeersUntil(until time.Time) { t.dual.SetPeersUntil(until) }

// reportWait bounds how long a heartbeat waits for the lanes, as
// kvshadow-proxy's.
const reportWait = time.Second

func (t target) Report(ctx context.Context) control.Heartbeat {
	ctx, cancel := context.WithTimeout(ctx, reportWait)
	defer cancel()
	h := control.Heartbeat{Drained: t.dual.Flush(ctx) == nil}
	st := t.dual.Stats()
	h.Dirty, h.Unsettled, h.ReconciliationNeeded = st.Dirty, st.Unsettled, st.ReconciliationNeeded
	f := t.dual.Fence()
	h.QuietUntil, h.IngestUnverified, h.FenceRemaining = f.QuietUntil, f.IngestUnverified, f.Remaining
	h.Watermarks = map[string]time.Time{t.ns: t.dual.Watermark()}
	return h
}
