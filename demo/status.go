package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// status prints what happens as it happens: events as they occur and a
// status line every second.
type status struct {
	out   io.Writer
	dual  *dualwrite.Store
	work  *workload
	start time.Time

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
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.print()
		}
	}
}

// print writes one status line, and an event when the breaker changed.
func (s *status) print() {
	st := s.dual.Stats()
	var drops, compared, divergent, pending uint64
	for _, n := range st.Drops {
		drops += n
	}
	for kind, n := range st.Comparisons {
		compared += n
		if kind.Divergent() {
			divergent += n
		}
		if kind == compare.Pending || kind == compare.Inconclusive {
			pending += n
		}
	}
	var repaired uint64
	for _, n := range st.Repairs {
		repaired += n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.Breaker != s.lastBreaker && s.lastBreaker != "" {
		fmt.Fprintf(s.out, "%s  breaker %s -> %s\n", s.elapsed(), s.lastBreaker, st.Breaker)
	}
	s.lastBreaker = st.Breaker
	fmt.Fprintf(s.out, "%s  stage=%-9s ops=%-6d errors=%d breaker=%-9s queued=%-4d dirty=%-4d dropped=%-4d repaired=%-4d compared=%d (divergent %d, pending/inconclusive %d)\n",
		s.elapsed(), st.Stage, s.work.ops.Load(), s.work.errs.Load(), st.Breaker, st.Queued, st.Dirty, drops, repaired, compared, divergent, pending)
}
