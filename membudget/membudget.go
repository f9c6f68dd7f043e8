package membudget

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
)

// The defaults of the zero Config.
const (
	// DefaultLimit is sized for a small machine: a 1 GiB VM or a container
	// limited to 512 MiB. Its grants (384 MiB) hold the largest single
	// request with room beside it: a bulk get of 25 MiB of values that are
	// not UTF-8 (about 175 MiB with its encoded answer), a bulk write of
	// 100 MiB (about 200 MiB while it is decoded), a tee batch of 64 MiB.
	DefaultLimit = 512 << 20
	// DefaultWait is how long a request waits for bytes before it is
	// refused: long enough for a request under way to finish and give its
	// bytes back, short enough that the client's retry comes soon.
	DefaultWait = 2 * time.Second
	// minReserve is the least of Limit that grants leave to the rest.
	minReserve = 32 << 20
	// unmanaged is what the process's resident memory holds that the Go
	// runtime's memory limit does not count: the binary's code and data
	// mapped in, the C and kernel side of its threads.
	unmanaged = 32 << 20
)

// ErrExhausted reports bytes that the budget could not grant within its
// wait: a front answers 503 with RetryAfter.
var ErrExhausted = errors.New("membudget: the memory budget is exhausted; retry shortly")

// ErrTooLarge reports an answer that the budget could never hold whole,
// however long it waited (Transport): ask for less. It matches
// ErrExhausted and kv.ErrTooLarge, as a bulk read too large for its
// server is.
var ErrTooLarge error = tooLarge{}

type tooLarge struct{}

func (tooLarge) Error() string {
	return "membudget: the answer is larger than the memory budget ever grants; ask for less at once"
}

func (tooLarge) Is(target error) bool { return target == ErrExhausted || target == kv.ErrTooLarge }

// RetryAfter is what a refused client is told to wait.
const RetryAfter = time.Second

// Config configures a Budget.
type Config struct {
	// Limit is the process's budget in bytes: 0 means DefaultLimit.
	Limit int64
	// Wait is how long Acquire waits for bytes: 0 means DefaultWait, a
	// negative value not at all.
	Wait time.Duration
	// Clock times the waits; nil is the system clock.
	Clock clock.Clock
}

// Budget grants bytes up to its limit. It is safe for concurrent use.
type Budget struct {
	limit, grantable int64
	wait             time.Duration
	clock            clock.Clock
	refused          atomic.Uint64

	mu      sync.Mutex
	inUse   int64
	waiting int           // Acquire calls waiting on freed
	freed   chan struct{} // closed and replaced when bytes come back to a waiter
}

// New returns a Budget for cfg.
func New(cfg Config) (*Budget, error) {
	if cfg.Limit < 0 {
		return nil, fmt.Errorf("membudget: a negative limit (%d)", cfg.Limit)
	}
	cfg.Limit = cmp.Or(cfg.Limit, DefaultLimit)
	reserve := max(cfg.Limit/4, minReserve)
	if cfg.Limit <= reserve {
		return nil, fmt.Errorf("membudget: a limit of %d bytes leaves nothing beside the %d the process needs for itself", cfg.Limit, reserve)
	}
	cfg.Wait = cmp.Or(cfg.Wait, DefaultWait)
	return &Budget{limit: cfg.Limit, grantable: cfg.Limit - reserve, wait: max(cfg.Wait, 0),
		clock: clock.OrReal(cfg.Clock), freed: make(chan struct{})}, nil
}

// SetProcessLimit makes the budget's Limit, less what the runtime does not
// count (the binary mapped in), the Go runtime's soft memory limit, unless
// GOMEMLIMIT already sets one. Commands call it, once; a library never does.
func (b *Budget) SetProcessLimit() {
	if b == nil || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(max(b.limit-unmanaged, b.grantable))
}

// Acquire takes n bytes, waiting up to the budget's Wait for others to give
// theirs back. It returns ErrExhausted when they do not, at once when n is
// more than the grants may ever hold, or ctx's error.
func (b *Budget) Acquire(ctx context.Context, n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	if n > b.grantable {
		b.refused.Add(1)
		return fmt.Errorf("%w: %d bytes are more than the budget grants (%d)", ErrExhausted, n, b.grantable)
	}
	var timer clock.Timer
	for {
		freed, ok := b.take(n)
		if ok {
			if timer != nil {
				timer.Stop()
			}
			return nil
		}
		if timer == nil {
			if b.wait <= 0 {
				b.refused.Add(1)
				return ErrExhausted
			}
			timer = b.clock.NewTimer(b.wait)
		}
		select {
		case <-freed:
			b.unwait()
		case <-timer.C():
			b.unwait()
			b.refused.Add(1)
			return ErrExhausted
		case <-ctx.Done():
			b.unwait()
			timer.Stop()
			return ctx.Err()
		}
	}
}

func (b *Budget) unwait() {
	b.mu.Lock()
	b.waiting--
	b.mu.Unlock()
}

// TryAcquire takes n bytes if they are free now, and reports whether it did.
// A refusal is counted.
func (b *Budget) TryAcquire(n int64) bool {
	if b == nil || n <= 0 {
		return true
	}
	b.mu.Lock()
	ok := b.inUse+n <= b.grantable
	if ok {
		b.inUse += n
	}
	b.mu.Unlock()
	if !ok {
		b.refused.Add(1)
	}
	return ok
}

// take takes n bytes if they fit, or returns the channel closed when some
// come back, counted as waited on until unwait.
func (b *Budget) take(n int64) (<-chan struct{}, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inUse+n <= b.grantable {
		b.inUse += n
		return nil, true
	}
	b.waiting++
	return b.freed, false
}

// Release gives back n bytes taken before.
func (b *Budget) Release(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	b.inUse -= n
	var freed chan struct{}
	if b.waiting > 0 {
		freed, b.freed = b.freed, make(chan struct{})
	}
	b.mu.Unlock()
	if freed != nil {
		close(freed)
	}
}

// InUse returns the bytes granted and not yet given back.
func (b *Budget) InUse() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inUse
}

// Limit returns what the grants may hold together (the process's budget
// less its reserve); 0 for a nil Budget.
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.grantable
}

// Refused returns how many requests for bytes were refused.
func (b *Budget) Refused() uint64 {
	if b == nil {
		return 0
	}
	return b.refused.Load()
}

// Hold is what one request holds of a Budget: it grows as the request needs
// more and gives everything back at once. It is not safe for concurrent use.
// A nil *Hold holds nothing and grants everything.
type Hold struct {
	b   *Budget
	ctx context.Context
	n   int64
	err error // the first refusal
}

// Hold starts a request's holding, charged against ctx's end.
func (b *Budget) Hold(ctx context.Context) *Hold { return &Hold{b: b, ctx: ctx} }

// Reset makes h what b.Hold(ctx) returns, in place: a server that keeps its
// Holds for reuse resets one per request, once the last holding was
// Released and nothing reads through it any more.
func (h *Hold) Reset(b *Budget, ctx context.Context) { *h = Hold{b: b, ctx: ctx} }

// Grow takes n more bytes for the request (Acquire's errors).
func (h *Hold) Grow(n int64) error {
	if h == nil {
		return nil
	}
	if err := h.b.Acquire(h.ctx, n); err != nil {
		if h.err == nil {
			h.err = err
		}
		return err
	}
	if h.b != nil && n > 0 {
		h.n += n
	}
	return nil
}

// Err returns the first error Grow returned, nil if none did: what a
// decoder that reads through Reader may have turned into its own error.
func (h *Hold) Err() error {
	if h == nil {
		return nil
	}
	return h.err
}

// Release gives back all the request holds.
func (h *Hold) Release() {
	if h == nil {
		return
	}
	h.b.Release(h.n)
	h.n = 0
}

// Reader charges what is read through it to the Hold, factor bytes for each
// byte read (what the reader's consumer builds from it: the body's copy,
// its decoded values). A read the budget cannot pay for fails with
// ErrExhausted.
func (h *Hold) Reader(r io.Reader, factor int64) io.Reader {
	return &chargedReader{r: r, h: h, factor: max(factor, 1)}
}

// Body is Reader for a request body: closing it closes rc. It is one
// allocation, where a reader and a closer put together are two.
func (h *Hold) Body(rc io.ReadCloser, factor int64) io.ReadCloser {
	return &chargedBody{chargedReader: chargedReader{r: rc, h: h, factor: max(factor, 1)}, body: rc}
}

type chargedBody struct {
	chargedReader
	body io.Closer
}

func (c *chargedBody) Close() error { return c.body.Close() }

type chargedReader struct {
	r      io.Reader
	h      *Hold
	factor int64
	err    error
	// whole: the reader can ask for less, so a read fails with ErrTooLarge
	// as Transport's doc says, rather than wait.
	whole bool
}

func (c *chargedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	if n > 0 {
		need := c.h.n + int64(n)*c.factor
		if c.whole && c.h.b != nil && need > c.h.b.grantable {
			c.h.b.refused.Add(1)
			c.err = fmt.Errorf("%w: the answer being read takes more than the %d bytes the budget grants", ErrTooLarge, c.h.b.grantable)
			return 0, c.err
		}
		if c.whole && c.h.b != nil && need > c.h.b.grantable/2 {
			// The answer alone holds most of what the budget grants:
			// others giving theirs back is not what it would wait for.
			if !c.h.b.TryAcquire(int64(n) * c.factor) {
				c.err = fmt.Errorf("%w: the answer being read takes %d bytes of the %d the budget grants, and the rest are taken", ErrTooLarge, need, c.h.b.grantable)
				return 0, c.err
			}
			c.h.n = need
			return n, err
		}
		if gerr := c.h.Grow(int64(n) * c.factor); gerr != nil {
			c.err = gerr
			return 0, gerr
		}
	}
	return n, err
}

// ParseSize reads a size in bytes, with an optional unit: "512MiB", "1GiB",
// "300MB", "4096".
func ParseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		n      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range units {
		if v, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(v), u.n
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("membudget: size %q: want a number of bytes, such as 512MiB, 1GiB or 300000000", s)
	}
	return n * mult, nil
}
