package botkv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/kvshadow/kvshadow/assembly"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// Option sets a piece of plumbing.
type Option func(*plumbing)

type plumbing struct {
	logger *slog.Logger
	tp     trace.TracerProvider
	mp     metric.MeterProvider
}

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

	log    *slog.Logger
	mp     metric.MeterProvider
	a      *assembly.Assembly
	closed bool
}

var who = assembly.Who{Name: "botkv", Self: "bot", JournalDir: EnvJournalDir}

// Open builds the store from the environment kvshadow-proxy reads, as
// kvshadow-proxy builds its own for a namespace (package assembly); the
// package doc says what it starts and what it refuses. Open then reads both
// stores and the stage document, all at once: a store that refuses a setting
// fails it with a *VarError for each. The store starts in the document's
// stage, or, when there is none yet, in KVSHADOW_STAGE (default off). When
// MongoDB does not answer (within 5 s by default, at most 8 s), see the
// package doc. Close releases everything Open started.
func Open(ctx context.Context, cfg Config, opts ...Option) (*Store, error) {
	p := plumb(opts)
	set, err := cfg.read()
	if err != nil {
		return nil, err
	}
	redactor, err := compare.NewRedactor(compare.KeyHMAC, []byte(set.keySecret)) // none: one drawn for the process
	if err != nil {
		return nil, &VarError{Name: EnvKeySecret, Problem: err.Error()}
	}
	b, err := assembly.OpenBackends(assembly.Settings{Account: set.primary.AccountID, Namespaces: []assembly.Namespace{{ID: set.primary.NamespaceID, Database: set.database}},
		CFToken: set.primary.APIToken, PrimaryURL: set.primary.BaseURL, MongoURI: set.mongoURI, Logger: p.logger, Who: who.Name})
	if err != nil {
		return nil, &VarError{Name: EnvMongoURI, Problem: err.Error()}
	}
	set.store.Redactor = redactor
	a, err := assembly.Start(ctx, assembly.Config{Who: who, Backends: b, Instance: set.instance, JournalDir: set.journalDir, RequireStage: true,
		Store: set.store, Tracer: p.tp, Meter: p.mp, Logger: p.logger})
	if err != nil {
		return nil, varErrors(err)
	}
	s := &Store{KV: a.Namespaces[0].Front, Dual: a.Namespaces[0].Dual, log: p.logger, mp: p.mp, a: a}
	if err := errors.Join(a.Watch(s.Dual), a.Follow(ctx)); err != nil {
		return nil, errors.Join(err, a.Close(context.WithoutCancel(ctx)))
	}
	return s, nil
}

// varErrors is Start's error in Open's words: a *VarError for each
// setting a store refused, or for the journal directory.
func varErrors(err error) error {
	var se *assembly.SettingsError
	var je *assembly.JournalError
	switch {
	case errors.As(err, &se):
		errs := make([]error, len(se.Lines))
		for i, line := range se.Lines {
			errs[i] = &VarError{Name: se.Settings[i], Problem: "refused: " + line}
			if se.Settings[i] == "" {
				errs[i] = &VarError{Name: EnvMongoURI, Problem: line}
			}
		}
		return errors.Join(errs...)
	case errors.As(err, &je):
		return &VarError{Name: EnvJournalDir, Problem: je.Error()}
	}
	return err
}

// Stage is the stage the store runs.
func (s *Store) Stage() dualwrite.Stage { return s.Dual.Stage() }

// Detached reports whether the store runs without having read the stage
// document: Open found MongoDB down and started in the stage the bot last
// ran, and the stage document has not been read since.
func (s *Store) Detached() bool { return s.a.Follower.Status().Detached }

// ErrNotShadowed matches WaitSettled's error in off and complete, where
// one store alone is written: nothing is copied, so nothing settles.
var ErrNotShadowed = errors.New("botkv: nothing is shadowed")

// WaitSettled waits until every key written so far is settled, or ctx
// ends: see dualwrite.Store.WaitSettled. In off (KVSHADOW_STAGE unset and
// no stage document) and complete it fails at once with ErrNotShadowed.
func (s *Store) WaitSettled(ctx context.Context) (dualwrite.Left, error) {
	if st := s.Dual.Stage(); st == dualwrite.Off || st == dualwrite.Complete {
		return dualwrite.Left{}, fmt.Errorf("%w: the stage is %s, in which writes go to one store alone (set %s=dualwrite, or move the stage document)",
			ErrNotShadowed, st, EnvStage)
	}
	return s.Dual.WaitSettled(ctx)
}

// Close drains the lanes until ctx ends (what they could not copy stays
// dirty, in the journal when there is one), leaves the control board with
// the store's last heartbeat (within 2 s when MongoDB did not answer
// lately), and releases the journal and the connections (the process's
// MongoDB clients with the last store). Every goroutine Open started has
// stopped when it returns.
func (s *Store) Close(ctx context.Context) error {
	if s.closed {
		return nil
	}
	a := s.a
	s.closed = true
	err := a.Drain(ctx)
	if lerr := a.Leave(context.WithoutCancel(ctx)); lerr != nil {
		s.log.Warn("botkv: could not leave the control board", slog.String("error", lerr.Error()))
	}
	return errors.Join(err, a.Close(ctx))
}
