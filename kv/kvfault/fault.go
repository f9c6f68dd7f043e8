package kvfault

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/internal/forward"
)

// The causes of injected failures, wrapped in a *kv.UnavailableError so that
// the code under test sees what a real unreachable backend returns.
var (
	// ErrInjected is the cause of a failure drawn at the error rate.
	ErrInjected = errors.New("kvfault: injected failure")
	// ErrOutage is the cause of every call made while the outage is on.
	ErrOutage = errors.New("kvfault: outage")
	// ErrUnsupported is returned by an optional ability (GetEntry, the bulk
	// calls) that the wrapped store lacks; it matches errors.ErrUnsupported.
	ErrUnsupported = fmt.Errorf("kvfault: the wrapped store lacks this ability: %w", errors.ErrUnsupported)
)

// Config sets the initial knobs. The zero value is a transparent wrapper on
// real time with seed 0.
type Config struct {
	// Name is the backend name carried by injected errors; "" means
	// "kvfault".
	Name string
	// Clock is the time of the wrapped store: it checks expiries and, unless
	// RealLatency is set, times the latency. Nil means real time.
	Clock clock.Clock
	// RealLatency makes the latency wait in real time even when Clock is a
	// fake: a really slow store whose expiries still follow the fake clock.
	RealLatency bool
	// Seed seeds the generator of jitter, errors and stale reads.
	Seed uint64
	// Latency is added before every call; Jitter adds a uniform random
	// extra in [0, Jitter).
	Latency, Jitter time.Duration
	// ReplyLatency and ReplyJitter delay the answer after the wrapped
	// store has acted, as a slow response path does: the effect is visible
	// to others before the caller learns of it.
	ReplyLatency, ReplyJitter time.Duration
	// ErrorRate is the probability, 0..1, that a call fails.
	ErrorRate float64
	// Outage makes every call fail at once.
	Outage bool
	// StaleRate is the probability, 0..1, that a read returns the value the
	// key had before its last write through this wrapper.
	StaleRate float64
	// StaleWindow, if positive, serves stale reads only within that long
	// of the key's last write through this wrapper, as Workers KV's edge
	// caches do (up to about 60 s): a read then returns a value the key
	// held at some instant of the window before it. Zero: at any age.
	StaleWindow time.Duration
	// MaxBulkBytes, when positive, refuses a GetMany whose values and
	// metadata pass it together with kv.ErrTooLarge, as Workers KV refuses
	// a bulk get past 25 MiB: the limit at a size a unit test can afford.
	MaxBulkBytes int
}

// Stats counts what the wrapper did. Counts are cumulative.
type Stats struct {
	// Reads counts Get, GetEntry and GetMany calls; Writes counts Put,
	// Delete, PutMany and DeleteMany; Lists counts List.
	Reads, Writes, Lists uint64
	// Injected counts failures drawn at the error rate, Outages the calls
	// refused by the outage, Stale the reads answered with an older value.
	Injected, Outages, Stale uint64
	// InFlight is the number of calls under way now (waiting out their
	// latency, inside the wrapped store or waiting out the reply's latency).
	// A call counts from the moment its latency timer is set, so a test that
	// sees it in flight may advance a fake clock past that latency.
	InFlight int64
}

// Store is the fault-injecting wrapper. It is safe for concurrent use.
type Store struct {
	inner kv.Store
	name  string
	clock clock.Clock
	real  bool // latency waits in real time
	bulk  int  // Config.MaxBulkBytes

	mu      sync.Mutex // guards the knobs, the generator and history
	knobs   knobs
	rng     *rand.Rand
	history map[string]history

	reads, writes, lists     atomic.Uint64
	injected, outages, stale atomic.Uint64
	inFlight                 atomic.Int64
}

type knobs struct {
	latency, jitter time.Duration
	reply, replyJit time.Duration
	errorRate       float64
	outage          bool
	staleRate       float64
	staleWindow     time.Duration
}

// history is what the wrapper knows of a key: the value its last write
// through the wrapper set, at at, and the one before, which a stale read
// returns.
type history struct {
	prev, cur version
	at        time.Time
}

type version struct {
	found bool
	entry kv.Entry
}

var (
	_ kv.Store        = (*Store)(nil)
	_ kv.ExpiryGetter = (*Store)(nil)
	_ kv.BulkGetter   = (*Store)(nil)
	_ kv.BulkPutter   = (*Store)(nil)
	_ kv.BulkDeleter  = (*Store)(nil)
)

// New wraps inner. It refuses a nil store, negative durations and rates
// outside 0..1.
func New(inner kv.Store, cfg Config) (*Store, error) {
	if inner == nil {
		return nil, errors.New("kvfault: nil store")
	}
	k := knobs{latency: cfg.Latency, jitter: cfg.Jitter, reply: cfg.ReplyLatency, replyJit: cfg.ReplyJitter, errorRate: cfg.ErrorRate, outage: cfg.Outage, staleRate: cfg.StaleRate, staleWindow: cfg.StaleWindow}
	if err := k.validate(); err != nil {
		return nil, err
	}
	return &Store{
		inner:   inner,
		name:    cmp.Or(cfg.Name, "kvfault"),
		clock:   clock.OrReal(cfg.Clock),
		real:    cfg.Clock == nil || cfg.RealLatency,
		bulk:    cfg.MaxBulkBytes,
		knobs:   k,
		rng:     rand.New(rand.NewPCG(cfg.Seed, 0x6b7666)),
		history: make(map[string]history),
	}, nil
}

func (k knobs) validate() error {
	switch {
	case k.latency < 0 || k.jitter < 0 || k.reply < 0 || k.replyJit < 0:
		return fmt.Errorf("kvfault: negative latency or jitter")
	case !isRate(k.errorRate):
		return fmt.Errorf("kvfault: error rate %v is outside 0..1", k.errorRate)
	case !isRate(k.staleRate):
		return fmt.Errorf("kvfault: stale rate %v is outside 0..1", k.staleRate)
	}
	return nil
}

func isRate(p float64) bool { return !math.IsNaN(p) && p >= 0 && p <= 1 }

// clampRate keeps a knob set at run time inside 0..1, so a test's arithmetic
// slip cannot make a setter fail mid-run.
func clampRate(p float64) float64 {
	if math.IsNaN(p) || p < 0 {
		return 0
	}
	return min(p, 1)
}

// SetLatency sets the added latency and its jitter; negative values count
// as zero.
func (s *Store) SetLatency(latency, jitter time.Duration) {
	s.set(func(k *knobs) { k.latency, k.jitter = max(latency, 0), max(jitter, 0) })
}

// SetReplyLatency sets the delay of the answer after the wrapped store has
// acted, and its jitter; negative values count as zero.
func (s *Store) SetReplyLatency(latency, jitter time.Duration) {
	s.set(func(k *knobs) { k.reply, k.replyJit = max(latency, 0), max(jitter, 0) })
}

// SetErrorRate sets the probability that a call fails, clamped to 0..1.
func (s *Store) SetErrorRate(p float64) {
	s.set(func(k *knobs) { k.errorRate = clampRate(p) })
}

// SetOutage turns the outage on or off.
func (s *Store) SetOutage(on bool) {
	s.set(func(k *knobs) { k.outage = on })
}

// SetStaleRate sets the probability that a read returns the older value,
// clamped to 0..1.
func (s *Store) SetStaleRate(p float64) {
	s.set(func(k *knobs) { k.staleRate = clampRate(p) })
}

// SetStaleWindow sets how long after a key's write its reads may be stale
// (Config.StaleWindow); zero means at any age.
func (s *Store) SetStaleWindow(d time.Duration) {
	s.set(func(k *knobs) { k.staleWindow = max(d, 0) })
}

func (s *Store) set(turn func(*knobs)) {
	s.mu.Lock()
	turn(&s.knobs)
	s.mu.Unlock()
}

// Inner returns the wrapped store, for a test that must read or write behind
// the faults.
func (s *Store) Inner() kv.Store { return s.inner }

// Exact returns the store with the same faults and exactly the wrapped
// store's optional abilities, kv.MetadataStore among them (see the package doc).
func (s *Store) Exact() kv.Store {
	return forward.Compose(s, s.inner, forward.Abilities{
		GetEntry:    s.GetEntry,
		PutEntry:    s.putEntry,
		GetValue:    s.getValue,
		GetMetadata: s.getMetadata,
		GetMany:     s.GetMany,
		PutMany:     s.putMany,
		DeleteMany:  s.DeleteMany,
	})
}

// Stats returns the counts so far.
func (s *Store) Stats() Stats {
	return Stats{
		Reads: s.reads.Load(), Writes: s.writes.Load(), Lists: s.lists.Load(),
		Injected: s.injected.Load(), Outages: s.outages.Load(), Stale: s.stale.Load(),
		InFlight: s.inFlight.Load(),
	}
}

// plan is what the knobs decided for one call, drawn in one critical section.
type plan struct {
	delay time.Duration
	reply time.Duration
	fail  error
	stale bool
}

func (s *Store) draw(read bool) plan {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.knobs
	p := plan{delay: k.latency}
	if k.jitter > 0 {
		p.delay += time.Duration(s.rng.Int64N(int64(k.jitter)))
	}
	p.reply = k.reply
	if k.replyJit > 0 {
		p.reply += time.Duration(s.rng.Int64N(int64(k.replyJit)))
	}
	switch {
	case k.outage:
		p.fail = kv.Unavailable(s.name, 0, ErrOutage)
	case k.errorRate > 0 && s.rng.Float64() < k.errorRate:
		p.fail = kv.Unavailable(s.name, 0, ErrInjected)
	case read && k.staleRate > 0 && s.rng.Float64() < k.staleRate:
		p.stale = true
	}
	return p
}

// begin waits out the call's latency and reports the injected failure, if
// any. An outage answers at once, as a refused connection does. A call that
// begin lets through is in flight (Stats.InFlight) until its end.
func (s *Store) begin(ctx context.Context, read bool) (plan, error) {
	p := s.draw(read)
	if errors.Is(p.fail, ErrOutage) {
		s.outages.Add(1)
		return p, p.fail
	}
	t := s.timer(p.delay)
	s.inFlight.Add(1)
	err := clock.Wait(ctx, t)
	if err == nil && p.fail != nil {
		s.injected.Add(1)
		err = p.fail
	}
	if err != nil {
		s.inFlight.Add(-1)
		return p, err
	}
	return p, nil
}

// end delays the answer of a call that reached the wrapped store, and ends
// its time in flight. The answer comes even if ctx ends meanwhile: the store
// has acted.
func (s *Store) end(p plan) {
	_ = clock.Wait(context.Background(), s.timer(p.reply))
	s.inFlight.Add(-1)
}

func (s *Store) timer(d time.Duration) clock.Timer {
	switch {
	case d <= 0:
		return nil
	case s.real:
		return clock.Real{}.NewTimer(d)
	default:
		return s.clock.NewTimer(d)
	}
}

// staleEntry returns the key's value before its last write through the
// wrapper; ok is false when the wrapper saw no write of the key.
func (s *Store) staleEntry(key string) (e kv.Entry, found, ok bool) {
	s.mu.Lock()
	h, ok := s.history[key]
	window := s.knobs.staleWindow
	s.mu.Unlock()
	if ok && window > 0 && s.clock.Now().Sub(h.at) >= window {
		return kv.Entry{}, false, false // past the window: reads are fresh
	}
	if !ok || !h.prev.found {
		return kv.Entry{}, false, ok
	}
	e = h.prev.entry
	if !e.Expiration.IsZero() && !s.clock.Now().Before(e.Expiration) {
		return kv.Entry{}, false, true
	}
	e.Value = append([]byte{}, e.Value...)
	return e, true, true
}

// remember records a write that the wrapped store accepted. The history
// holds every key ever written, which suits a test fake.
func (s *Store) remember(key string, next version) {
	now := s.clock.Now()
	s.mu.Lock()
	h := s.history[key]
	s.history[key] = history{prev: h.cur, cur: next, at: now}
	s.mu.Unlock()
}
