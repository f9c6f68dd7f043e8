package dualwrite

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
)

// Store is the dual-write kv.Store. Create it with New and stop it with
// Close. It is safe for concurrent use.
type Store struct {
	cfg        settings
	stores     [2]kv.Store        // by Role
	expiry     [2]kv.ExpiryGetter // by Role; nil when the store has no such ability
	bulk       [2]kv.BulkGetter   // by Role; nil when the store has no such ability
	puts       [2]kv.BulkPutter   // by Role
	deletes    [2]kv.BulkDeleter  // by Role
	withExpiry bool               // both stores report expiries: compare them
	metadata   bool               // both stores keep metadata: copy and compare it
	threshold  uint64             // sampleThreshold(CompareRate)
	clock      clock.Clock
	log        *slog.Logger
	obs        Observer
	sink       Sink

	stage atomic.Uint32
	// stageSince is when the Store entered its stage (New, for the
	// first), and lastCopy when the latest ingested copy arrived, in Unix
	// nanoseconds on the Store's clock: the fence's clocks; passAt is when
	// the repair loop's next pass is due.
	stageSince, lastCopy, passAt atomic.Int64
	// authSince is when MongoDB became authoritative, as far as the Store
	// knows (Config.AuthoritativeSince, or its own flip), in Unix
	// nanoseconds; 0 when it does not know, or MongoDB is not.
	authSince   atomic.Int64
	started     int64         // when New ran, Unix nanoseconds on the Store's clock
	noFleetSaid atomic.Bool   // SetPeersUntil's warning of a Store without a Fleet, said once
	handover    handoverCheck // the fence's full comparison (handover.go)
	// gate orders writes against stage flips and Close: a write holds it
	// shared from reading the stage until its copy is enqueued, so that
	// SetStage and Close, which take it exclusively, never see a write half
	// done.
	gate    sync.RWMutex
	closed  atomic.Bool
	stageMu sync.Mutex    // serializes SetStage
	key     stageKeyCheck // what the primary holds at StageKey (handover.go)

	slots    []slot
	lanes    []*lane
	breakers [2]*breaker // by Role
	set      *settleSet
	dels     deleteGate
	watch    *watchdog
	ctr      counters
	settler  *lane         // the verification pass's timeouts, as a lane's
	settling chan struct{} // held by the verification pass under way

	journal    Journal
	recorder   Recorder // the journal's, when it has the ability
	journalOK  atomic.Bool
	commitKick chan struct{}
	// bg is the context of the Store's own passes; Close cancels it.
	bg       context.Context
	bgCancel context.CancelFunc
	// pacing is what the lanes wait for the shadow's budget under; Close
	// cancels it when it gives up draining.
	pacing context.Context
	unpace context.CancelFunc

	events     chan BreakerEvent
	repairKick chan struct{}
	settleKick chan struct{} // RepairDirty asks for a verification pass
	rearm      chan struct{} // a stage change asks for the next pass to be timed again
	stopping   chan struct{} // closed by Close: workers drain and return
	quit       chan struct{} // closed by Close: the other goroutines return
	aborted    atomic.Bool   // Close gave up draining
	workers    sync.WaitGroup
	background sync.WaitGroup

	closeMu   sync.Mutex
	closeDone bool
	warned    sync.Map // one-time warnings already logged
}

var (
	_ kv.Store         = (*Store)(nil)
	_ kv.ExpiryGetter  = (*Store)(nil)
	_ kv.MetadataStore = (*Store)(nil)
	_ kv.BulkGetter    = (*Store)(nil)
	_ kv.BulkPutter    = (*Store)(nil)
	_ kv.BulkDeleter   = (*Store)(nil)
)

// New checks cfg, loads the settle journal when there is one, and starts
// the Store's goroutines (see Lifecycle in the package doc); Close stops them.
func New(cfg Config, opts ...Option) (*Store, error) {
	set, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.observer == nil {
		o.observer = NopObserver{}
	}
	s := &Store{
		cfg:        set,
		stores:     [2]kv.Store{cfg.Primary, cfg.Shadow},
		threshold:  sampleThreshold(cfg.CompareRate),
		clock:      clock.OrReal(o.clock),
		log:        cmp.Or(o.logger, slog.Default()),
		obs:        o.observer,
		sink:       set.Sink,
		slots:      make([]slot, 1<<slotBits),
		lanes:      make([]*lane, set.Lanes),
		set:        newSettleSet(set.MaxDirty, set.MaxSuspects, set.Journal != nil),
		journal:    set.Journal,
		settling:   make(chan struct{}, 1),
		commitKick: make(chan struct{}, 1),
		events:     make(chan BreakerEvent, 64),
		repairKick: make(chan struct{}, 1),
		settleKick: make(chan struct{}, 1),
		rearm:      make(chan struct{}, 1),
		stopping:   make(chan struct{}),
		quit:       make(chan struct{}),
	}
	if s.sink == nil {
		s.sink = LogSink{Logger: s.log}
	}
	s.bg, s.bgCancel = context.WithCancel(context.Background())
	s.pacing, s.unpace = context.WithCancel(context.Background())
	s.withExpiry, s.metadata = true, true
	for r := range s.stores {
		s.expiry[r], _ = s.stores[r].(kv.ExpiryGetter)
		s.bulk[r], _ = s.stores[r].(kv.BulkGetter)
		s.puts[r], _ = s.stores[r].(kv.BulkPutter)
		s.deletes[r], _ = s.stores[r].(kv.BulkDeleter)
		_, md := s.stores[r].(kv.MetadataStore)
		s.withExpiry = s.withExpiry && (s.expiry[r] != nil || s.bulk[r] != nil)
		s.metadata = s.metadata && md
		s.breakers[r] = newBreaker(Role(r), set.Breaker, s.clock, s.events, &s.ctr.lostEvents, s.repairKick)
	}
	s.stage.Store(uint32(cfg.Stage))
	s.started = s.clock.Now().UnixNano()
	s.stageSince.Store(s.started)
	if cfg.Stage.authority() == RoleShadow && !cfg.AuthoritativeSince.IsZero() {
		s.authSince.Store(cfg.AuthoritativeSince.UnixNano())
	}
	if s.journal != nil {
		s.recorder, _ = s.journal.(Recorder)
		s.journalOK.Store(true)
		if err := s.loadJournal(s.bg); err != nil {
			s.bgCancel()
			return nil, err
		}
	}
	for i := range s.lanes {
		s.lanes[i] = newLane(set.LaneDepth)
	}
	s.settler = newLane(0)
	s.watch = &watchdog{clock: s.clock, lanes: append(slices.Clip(s.lanes), s.settler), kick: make(chan struct{}, 1)}

	s.workers.Add(len(s.lanes))
	for _, l := range s.lanes {
		go s.work(l)
	}
	s.background.Add(3)
	go func() { defer s.background.Done(); s.watch.run(s.quit) }()
	go func() { defer s.background.Done(); s.repairLoop() }()
	go func() { defer s.background.Done(); s.eventLoop() }()
	if s.journal != nil {
		s.background.Add(1)
		go func() { defer s.background.Done(); s.commitLoop() }()
	}
	if s.keyOwed() {
		s.kickRepair() // the loop checks StageKey now (handover.go)
	}
	return s, nil
}

// eventLoop delivers breaker state changes, which gobreaker reports under
// its mutex, to the logger and the observer.
func (s *Store) eventLoop() {
	for {
		select {
		case e := <-s.events:
			s.breakerChanged(e)
		case <-s.quit:
			for {
				select {
				case e := <-s.events:
					s.breakerChanged(e)
				default:
					return
				}
			}
		}
	}
}

func (s *Store) breakerChanged(e BreakerEvent) {
	level := slog.LevelInfo
	if e.To == BreakerOpen {
		level = slog.LevelWarn
	}
	s.log.LogAttrs(context.Background(), level, "dualwrite: circuit breaker "+string(e.To),
		slog.String("role", e.Role.String()), slog.String("from", string(e.From)))
	s.obs.BreakerChanged(e)
}

func (s *Store) warnOnce(msg string, attrs ...slog.Attr) {
	if _, seen := s.warned.LoadOrStore(msg, true); !seen {
		s.log.LogAttrs(context.Background(), slog.LevelWarn, msg, attrs...)
	}
}
