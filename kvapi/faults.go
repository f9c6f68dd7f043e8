package kvapi

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvshadow/kvshadow/clock"
)

// Failure is the answer of an injected failure.
type Failure struct {
	// Status is the HTTP status: 500..599, or 200 for an answer that says
	// success:false with HTTP 200, as the API sometimes does; anything else
	// means 503.
	Status int
	// RetryAfter, when positive, is sent as the Retry-After header.
	RetryAfter time.Duration
}

// Faults are the server's fault switches. The zero value has every fault
// off. Every method is safe to call while the server is serving, so a test
// can turn a fault on between two requests.
type Faults struct {
	latency    atomic.Int64 // a time.Duration
	writeLimit atomic.Bool
	window     atomic.Int64 // a time.Duration
	emptyPages atomic.Bool

	mu       sync.Mutex // guards the failures
	failNext int
	nextWith Failure
	failRate float64
	failDebt float64 // failRate accumulated since the last failure
	rateWith Failure
}

// SetLatency delays every request by d (0 turns it off). The delay runs on
// the server's clock, so under a fake clock a test advances it.
func (f *Faults) SetLatency(d time.Duration) { f.latency.Store(int64(max(d, 0))) }

// SetWriteRateLimit turns on Workers KV's limit of one write per second per
// key (429 with Retry-After; in a bulk write, unsuccessful_keys).
func (f *Faults) SetWriteRateLimit(on bool) { f.writeLimit.Store(on) }

// FailNext makes the next n requests fail with fail (n <= 0 cancels).
func (f *Faults) FailNext(n int, fail Failure) {
	f.mu.Lock()
	f.failNext = max(n, 0)
	f.nextWith = fail
	f.mu.Unlock()
}

// SetFailureRate makes a fraction rate (0..1) of requests fail with fail.
// The failures are spread evenly and deterministically: at 0.25, every
// fourth request fails.
func (f *Faults) SetFailureRate(rate float64, fail Failure) {
	f.mu.Lock()
	f.failRate = min(max(rate, 0), 1)
	f.failDebt = 0
	f.rateWith = fail
	f.mu.Unlock()
}

// SetConsistencyWindow sets how long an edge location keeps serving what it
// cached (0 turns eventual consistency off). See the package documentation.
func (f *Faults) SetConsistencyWindow(d time.Duration) { f.window.Store(int64(max(d, 0))) }

// SetEmptyListPages makes every page of keys that is not the last come back
// empty, with a cursor that resumes where it stood, as Workers KV may do.
// The page after an empty one is served normally.
func (f *Faults) SetEmptyListPages(on bool) { f.emptyPages.Store(on) }

// Reset turns every fault off.
func (f *Faults) Reset() {
	f.SetLatency(0)
	f.SetWriteRateLimit(false)
	f.SetConsistencyWindow(0)
	f.SetEmptyListPages(false)
	f.FailNext(0, Failure{})
	f.SetFailureRate(0, Failure{})
}

func (f *Faults) consistencyWindow() time.Duration { return time.Duration(f.window.Load()) }

func (f *Faults) rateLimited() bool { return f.writeLimit.Load() }

func (f *Faults) emptyListPages() bool { return f.emptyPages.Load() }

// delay waits out the latency fault; it reports false when the request was
// cancelled meanwhile.
func (f *Faults) delay(ctx context.Context, clk clock.Clock) bool {
	d := time.Duration(f.latency.Load())
	return d <= 0 || clock.Sleep(ctx, clk, d) == nil
}

// injected reports the failure this request must answer with, if any.
func (f *Faults) injected() (*apiError, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var fail Failure
	switch {
	case f.failNext > 0:
		f.failNext--
		fail = f.nextWith
	case f.failRate > 0:
		f.failDebt += f.failRate
		if f.failDebt < 1-1e-9 {
			return nil, false
		}
		f.failDebt--
		fail = f.rateWith
	default:
		return nil, false
	}
	status := fail.Status
	if status != http.StatusOK && (status < 500 || status > 599) {
		status = http.StatusServiceUnavailable
	}
	e := errorf(status, CodeUnavailable, "service temporarily unavailable")
	e.retryAfter = fail.RetryAfter
	return e, true
}
