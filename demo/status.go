package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/service/admin"
)

// status prints what happens as it happens, in one voice: events, the
// layer's own warnings, and a status line every second.
type status struct {
	out   io.Writer
	dual  interface{ Stats() admin.StoreStats }
	work  *workload
	start time.Time
	// outage is set while the demo holds MongoDB down on purpose.
	outage atomic.Bool
	// flips counts the flips of authority made: to live, and back.
	flips atomic.Int32

	mu          sync.Mutex
	lastBreaker dualwrite.BreakerState
}

func (s *status) elapsed() string {
	return fmt.Sprintf("%5.1fs", time.Since(s.start).Seconds())
}

func (s *status) event(format string, a ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.out, "%s  %s\n", s.elapsed(), fmt.Sprintf(format, a...))
}

func (s *status) loop(ctx context.Context) {
	for pause(ctx, time.Second) == nil {
		s.print()
	}
}

// breakerNotes say why a breaker change is expected in the demo's story.
var breakerNotes = map[dualwrite.BreakerState]string{
	dualwrite.BreakerOpen:     "expected: MongoDB is down on purpose; copies are skipped and their keys marked dirty",
	dualwrite.BreakerHalfOpen: "expected: a few copies probe whether MongoDB is back",
	dualwrite.BreakerClosed:   "expected: MongoDB answers again; repair copies the dirty keys",
}

// print writes one status line, and an event when the breaker changed.
func (s *status) print() {
	st := s.dual.Stats()
	var drops, compared, divergent, pending uint64
	for _, n := range st.Drops {
		drops += n
	}
	for k, n := range st.Comparisons {
		compared += n
		kind := compare.Kind(k)
		if kind.Divergent() {
			divergent += n
		}
		if kind == compare.Pending || kind == compare.Inconclusive {
			pending += n
		}
	}
	// Deferred repairs are keys put back to wait out the consistency
	// window: not repaired yet.
	repaired := st.Repairs[string(dualwrite.RepairCopied)] + st.Repairs[string(dualwrite.RepairDeleted)]
	s.mu.Lock()
	defer s.mu.Unlock()
	breaker := dualwrite.BreakerState(st.Breaker)
	if breaker != s.lastBreaker && s.lastBreaker != "" {
		fmt.Fprintf(s.out, "%s  breaker %s -> %s (%s)\n", s.elapsed(), s.lastBreaker, breaker, breakerNotes[breaker])
	}
	s.lastBreaker = breaker
	fmt.Fprintf(s.out, "%s  stage=%-9s ops=%-6d errors=%d breaker=%-9s queued=%-4d dirty=%-4d dropped=%-4d repaired=%-4d compared=%d (divergent %d, pending/inconclusive %d)\n",
		s.elapsed(), st.Stage, s.work.ops.Load(), s.work.errs.Load(), st.Breaker, st.Queued, st.Dirty, drops, repaired, compared, divergent, pending)
}

// logHandler turns the dual-write layer's warnings into the story's events
// (expected while the outage is planned); breaker records are left to the
// status line, which says the same in the story's words.
type logHandler struct {
	s     *status
	attrs []slog.Attr
}

func (h logHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h logHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "dualwrite: circuit breaker") {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.Message)
	add := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	// Copies queued during the outage fail until the breaker has closed
	// again: that too is the outage.
	h.s.mu.Lock()
	recovering := h.s.lastBreaker != "" && h.s.lastBreaker != dualwrite.BreakerClosed
	h.s.mu.Unlock()
	note := "unexpected"
	if h.s.outage.Load() || recovering {
		note = "expected during the planned outage"
	}
	h.s.event("%s %s (%s)", strings.ToLower(r.Level.String()), b.String(), note)
	return nil
}

func (h logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return logHandler{s: h.s, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...)}
}

func (h logHandler) WithGroup(string) slog.Handler { return h }
