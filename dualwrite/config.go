package dualwrite

import (
	"cmp"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"time"

	"github.com/kvshadow/kvshadow/budget"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

// The defaults a zero Config field stands for.
const (
	DefaultLanes             = 16
	DefaultLaneDepth         = 128
	DefaultMaxQueueBytes     = 64 << 20
	DefaultMaxBacklog        = 100_000 // ten bulk writes of Workers KV's largest
	DefaultShadowTimeout     = 5 * time.Second
	DefaultShadowThroughput  = 1 << 20 // bytes a second
	DefaultConsistencyWindow = 60 * time.Second
	DefaultRepairInterval    = time.Minute
	DefaultMaxDirty          = 100_000
	DefaultMaxSuspects       = 10_000
	DefaultVerifyBatch       = 100 // one Workers KV bulk get
	// DefaultFenceInterval: the tee's stage TTL (30 s), plus its stage read
	// timeout (1 s), plus the longest invocation, waitUntil included (30 s),
	// is the longest an isolate can still write its binding on a stage read
	// before Handover and have its copy on the way: 61 s, rounded up by 4 s
	// for the copy's own trip and for the clocks of the instances that
	// compare heartbeats.
	DefaultFenceInterval = 65 * time.Second
	// DefaultIngestMaxAge is how far before its arrival an ingested
	// write's acknowledged-at time is trusted: past the fence and a
	// delayed batch's retries, short of what only a replay can be.
	DefaultIngestMaxAge = 5 * time.Minute
	// DefaultIngestMaxLead is how far after its arrival an acknowledged-at
	// time is trusted (Workers' clocks and ours are NTP-synchronised): a
	// time later than that is a bug or a forgery.
	DefaultIngestMaxLead = 2 * time.Second

	DefaultFailuresToOpen   = 5
	DefaultOpenTimeout      = 30 * time.Second
	DefaultHalfOpenRequests = 1
)

// Config configures a Store. Every zero field means its documented default;
// only Primary and Shadow are required.
type Config struct {
	// Primary is the store the migration starts from (Workers KV); Shadow
	// the store it moves to (MongoDB). They must be two different stores.
	Primary, Shadow kv.Store
	// Stage is the initial stage; the zero value is Off.
	Stage Stage

	// Lanes is the number of ordered lanes (and worker goroutines) that
	// carry the asynchronous writes; a key always uses the same lane.
	// Default DefaultLanes.
	Lanes int
	// LaneDepth is how many operations a lane holds before it drops.
	// Default DefaultLaneDepth.
	LaneDepth int
	// MaxQueueBytes bounds the bytes of values held by all lanes together,
	// so that large values cannot make the lanes' memory unbounded; a write
	// beyond it is dropped as if its lane were full. Default
	// DefaultMaxQueueBytes.
	MaxQueueBytes int64
	// Memory, when set, is the process's memory budget: the values of the
	// copies waiting in the lanes draw from it too, so that they and the
	// requests being served never hold more than it together. A copy it
	// cannot pay for at once is dropped as past MaxQueueBytes (lane_full,
	// its key marked dirty). Nil: the lanes answer to MaxQueueBytes alone.
	Memory MemoryBudget

	// MaxBacklog bounds the copies of bulk writes that wait, over all lanes,
	// for room in a full lane instead of being dropped (see Optional
	// abilities); their values count against MaxQueueBytes. Default
	// DefaultMaxBacklog.
	MaxBacklog int

	// ShadowTimeout bounds each asynchronous operation, on the Store's
	// clock, with ShadowThroughput's allowance for its bytes. Default
	// DefaultShadowTimeout.
	ShadowTimeout time.Duration
	// ShadowThroughput is the rate, in bytes a second, that an operation's
	// timeout allows for the bytes it carries or may return (a verification
	// read: up to 25 MiB): a second more than ShadowTimeout for each whole
	// ShadowThroughput. Default DefaultShadowThroughput.
	ShadowThroughput int64
	// Breaker configures the circuit breaker of the non-authoritative
	// store.
	Breaker BreakerConfig

	// CompareRate is the share of keys, 0..1, whose reads are compared in
	// the Shadow and Live stages. The choice is a hash of the key, so a
	// sampled key is always sampled. Zero compares nothing.
	CompareRate float64
	// ConsistencyWindow is how long a store may serve a key's old value
	// after a write (Workers KV: up to 60 s). A comparison inside it
	// reports Pending, and repair waits it out before copying a key.
	// Default DefaultConsistencyWindow; negative means none (both stores
	// read their own writes at once).
	ConsistencyWindow time.Duration
	// RepairInterval is how often unsettled keys are verified and dirty
	// keys repaired, besides each time the breaker closes. Default
	// DefaultRepairInterval.
	RepairInterval time.Duration
	// MaxDirty bounds the settle set (dirty and unsettled keys together),
	// in memory and in the journal; beyond it keys are counted and a full
	// reconciliation is flagged (and journaled). Default DefaultMaxDirty.
	MaxDirty int
	// MaxSuspects bounds the suspects: keys only a sampled read found
	// different, kept apart from the settle set (see The settle set). Default
	// DefaultMaxSuspects.
	MaxSuspects int
	// VerifyBatch is the most keys one verification read carries. Default
	// DefaultVerifyBatch (one Workers KV bulk get).
	VerifyBatch int

	// FenceInterval is how long the flip from Handover to Live waits after
	// the Store entered Handover (see The handover). Default
	// DefaultFenceInterval; negative means no wait (no tee writes any binding:
	// proxy mode only).
	FenceInterval time.Duration
	// IngestMaxAge and IngestMaxLead bound how far before and after its
	// arrival an ingested write's acknowledged-at time is trusted (see The
	// clocks). Defaults DefaultIngestMaxAge and DefaultIngestMaxLead.
	IngestMaxAge, IngestMaxLead time.Duration
	// AuthoritativeSince is, for a Store that starts where MongoDB is
	// authoritative (live and after), a time at or after the flip, from which
	// copies are judged (RefusedAckedAfterFlip, see Forged copies);
	// kvshadow-proxy sets its start. Zero: only a flip the Store makes sets it.
	AuthoritativeSince time.Time

	// Journal keeps the settle set on disk (package journal), so that the
	// keys not yet settled survive a restart. Nil keeps it in memory only.
	Journal Journal
	// PrimaryBudget is the request budget of the primary (Workers KV's
	// account API limit) that verification and repair draw on, shared with
	// whatever else the program spends it on (shadow-report). The callers'
	// own requests never wait on it. Nil: no cap.
	PrimaryBudget *budget.Limiter
	// ShadowBudget is the request budget of the shadow (MongoDB Atlas M0
	// sustains about 100 operations a second) that the Store's own work toward
	// it draws on (see Keys left out, and the shadow's rate); the callers'
	// requests, and writes to the shadow as the authoritative store, never
	// wait on it. Nil: no cap.
	ShadowBudget *budget.Limiter

	// Redactor turns keys and values into what divergence records carry.
	// Nil means compare.KeyHMAC with a random per-process secret.
	Redactor *compare.Redactor
	// Sink receives each divergence found by a comparison. Nil logs them on
	// the Store's logger.
	Sink Sink
	// ExcludePrefixes lists key prefixes left out of the migration (a bot's
	// own bookkeeping, such as "__retry:"); kv.ReservedPrefix is always among
	// them. An empty prefix is refused. See Keys left out.
	ExcludePrefixes []string

	// Fleet tells the Store what the other instances over the same stores
	// still have on its way and reports a difference once for them all (see
	// Confirmation); control.Stores builds a store with it. Nil: the Store is
	// alone; instances sharing stores without one confirm differences each
	// other's copies explain, and a Store told of peers (SetPeersUntil) warns.
	Fleet Fleet
}

// BreakerConfig configures the circuit breaker (sony/gobreaker) that guards
// the non-authoritative store. Each store has its own breaker, used while it
// is the non-authoritative one. Zero fields mean the defaults.
type BreakerConfig struct {
	// FailuresToOpen is the number of consecutive failed operations that
	// opens the breaker. Default DefaultFailuresToOpen.
	FailuresToOpen int
	// OpenTimeout is how long the breaker stays open before it lets probe
	// operations through, on the Store's clock. Default DefaultOpenTimeout.
	OpenTimeout time.Duration
	// HalfOpenRequests is the number of probe operations let through while
	// half-open; that many successes close the breaker. Default
	// DefaultHalfOpenRequests.
	HalfOpenRequests int
	// CountInterval, if positive, clears the failure counts of a closed
	// breaker at that period (gobreaker's Interval, which follows the wall
	// clock). Zero never clears them; a success always resets the streak.
	CountInterval time.Duration
}

// Option sets a piece of plumbing.
type Option func(*options)

type options struct {
	clock    clock.Clock
	logger   *slog.Logger
	observer Observer
}

// WithClock sets the clock of expiries, timeouts, the breaker's open period,
// settling and repair. The default is the system clock.
func WithClock(c clock.Clock) Option { return func(o *options) { o.clock = c } }

// WithLogger sets the logger of stage and breaker changes and of the
// default Sink. The default is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithObserver sets the Observer of asynchronous operations, drops,
// comparisons, repairs and changes of stage and breaker state.
func WithObserver(obs Observer) Option { return func(o *options) { o.observer = obs } }

// settings is a Config with its defaults applied.
type settings struct {
	Config
	window time.Duration // ConsistencyWindow resolved: 0 means none
	// copyLife bounds how long a copy may wait in its lane: with
	// ShadowTimeout it keeps every copy's life under the window, so that
	// no copy in flight can hold a difference for a whole window (see
	// the confirmation rule). 0 when ShadowTimeout is not shorter than the
	// window: no bound.
	copyLife time.Duration
	fence    time.Duration // FenceInterval resolved: 0 means none
	exclude  kv.Exclusions // ExcludePrefixes and kv.ReservedPrefix
}

func (c Config) resolve() (settings, error) {
	bad := func(format string, args ...any) (settings, error) {
		return settings{}, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case c.Primary == nil || c.Shadow == nil:
		return bad("both Primary and Shadow stores are required")
	case sameStore(c.Primary, c.Shadow):
		return bad("Primary and Shadow are the same store")
	case !c.Stage.Valid():
		return bad("unknown stage %d", c.Stage)
	case c.Lanes < 0 || c.LaneDepth < 0 || c.MaxQueueBytes < 0 || c.MaxDirty < 0 || c.VerifyBatch < 0 || c.MaxSuspects < 0 || c.MaxBacklog < 0:
		return bad("Lanes (%d), LaneDepth (%d), MaxQueueBytes (%d), MaxDirty (%d), MaxSuspects (%d), VerifyBatch (%d) and MaxBacklog (%d) must not be negative",
			c.Lanes, c.LaneDepth, c.MaxQueueBytes, c.MaxDirty, c.MaxSuspects, c.VerifyBatch, c.MaxBacklog)
	case c.IngestMaxAge < 0 || c.IngestMaxLead < 0:
		return bad("IngestMaxAge (%s) and IngestMaxLead (%s) must not be negative", c.IngestMaxAge, c.IngestMaxLead)
	case c.ShadowTimeout < 0 || c.RepairInterval < 0 || c.ShadowThroughput < 0:
		return bad("ShadowTimeout (%s), ShadowThroughput (%d) and RepairInterval (%s) must not be negative", c.ShadowTimeout, c.ShadowThroughput, c.RepairInterval)
	case math.IsNaN(c.CompareRate) || c.CompareRate < 0 || c.CompareRate > 1:
		return bad("CompareRate %v is outside 0..1", c.CompareRate)
	case c.Breaker.FailuresToOpen < 0 || c.Breaker.HalfOpenRequests < 0 ||
		c.Breaker.OpenTimeout < 0 || c.Breaker.CountInterval < 0:
		return bad("breaker settings must not be negative")
	case c.Breaker.FailuresToOpen > math.MaxUint32 || c.Breaker.HalfOpenRequests > math.MaxUint32:
		return bad("breaker counts must fit in 32 bits")
	}
	s := settings{Config: c}
	var err error
	if s.exclude, err = kv.NewExclusions(c.ExcludePrefixes); err != nil {
		return bad("ExcludePrefixes: %v", err)
	}
	s.Lanes = cmp.Or(s.Lanes, DefaultLanes)
	s.LaneDepth = cmp.Or(s.LaneDepth, DefaultLaneDepth)
	s.MaxDirty = cmp.Or(s.MaxDirty, DefaultMaxDirty)
	s.MaxSuspects = cmp.Or(s.MaxSuspects, DefaultMaxSuspects)
	s.VerifyBatch = cmp.Or(s.VerifyBatch, DefaultVerifyBatch)
	s.MaxBacklog = cmp.Or(s.MaxBacklog, DefaultMaxBacklog)
	s.Breaker.FailuresToOpen = cmp.Or(s.Breaker.FailuresToOpen, DefaultFailuresToOpen)
	s.Breaker.HalfOpenRequests = cmp.Or(s.Breaker.HalfOpenRequests, DefaultHalfOpenRequests)
	s.MaxQueueBytes = cmp.Or(s.MaxQueueBytes, DefaultMaxQueueBytes)
	s.ShadowTimeout = cmp.Or(s.ShadowTimeout, DefaultShadowTimeout)
	s.ShadowThroughput = cmp.Or(s.ShadowThroughput, DefaultShadowThroughput)
	s.RepairInterval = cmp.Or(s.RepairInterval, DefaultRepairInterval)
	s.Breaker.OpenTimeout = cmp.Or(s.Breaker.OpenTimeout, DefaultOpenTimeout)
	switch {
	case c.ConsistencyWindow == 0:
		s.window = DefaultConsistencyWindow
	case c.ConsistencyWindow > 0:
		s.window = c.ConsistencyWindow
	}
	if s.window > s.ShadowTimeout {
		s.copyLife = s.window - s.ShadowTimeout
	}
	switch {
	case c.FenceInterval == 0:
		s.fence = DefaultFenceInterval
	case c.FenceInterval > 0:
		s.fence = c.FenceInterval
	}
	s.IngestMaxAge = cmp.Or(s.IngestMaxAge, DefaultIngestMaxAge)
	s.IngestMaxLead = cmp.Or(s.IngestMaxLead, DefaultIngestMaxLead)
	if s.Redactor == nil {
		r, err := compare.NewRedactor(compare.KeyHMAC, nil)
		if err != nil {
			return settings{}, err
		}
		s.Redactor = r
	}
	return s, nil
}

// sameStore compares two stores without the panic that == raises on
// interfaces holding uncomparable values.
func sameStore(a, b kv.Store) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}

// MemoryBudget is the process's memory budget as the lanes use it (a
// *membudget.Budget): bytes taken without waiting, and given back.
type MemoryBudget interface {
	TryAcquire(n int64) bool
	Release(n int64)
}
