package report

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/clock"
)

// startProgress writes the progress on cfg.Progress every ProgressEvery
// until the returned stop, which waits for the goroutine and writes the
// last state.
func (e *engine) startProgress() (stop func()) {
	w := e.cfg.Progress
	if w == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for clock.Sleep(ctx, e.cfg.Clock, e.cfg.ProgressEvery) == nil {
			e.drawProgress(w)
		}
	})
	return func() {
		cancel()
		wg.Wait()
		e.drawProgress(w)
		if !e.cfg.ProgressLines {
			fmt.Fprintln(w)
		}
	}
}

// drawProgress writes the status: a redrawn line on a terminal, a plain
// line in a log.
func (e *engine) drawProgress(w io.Writer) {
	e.mu.Lock()
	scanned, module := e.Scanned, e.Module
	e.mu.Unlock()
	line := e.progressLine(scanned, module, e.cfg.Clock.Now())
	if e.cfg.ProgressLines {
		fmt.Fprintln(w, "progress: "+line)
		return
	}
	fmt.Fprint(w, "\r"+line+"\x1b[K")
}

func (e *engine) progressLine(scanned int64, module string, now time.Time) string {
	var b strings.Builder
	// A wait comes first: a count that stalls must say why.
	for _, s := range []*side{e.primary, e.shadow} {
		if s.waiting.Load() == 0 {
			continue
		}
		d, paused := s.limit.Delay()
		if d <= 0 {
			continue
		}
		secs := int64(math.Ceil(d.Seconds()))
		if paused {
			fmt.Fprintf(&b, "waiting: %s asked to be left alone (resumes in %d s) · ", s.name, secs)
		} else {
			fmt.Fprintf(&b, "waiting for %s's API budget (resumes in %d s) · ", s.name, secs)
		}
	}
	if exp := e.cfg.ExpectedKeys; exp > 0 {
		about := "~" // --expected-keys is an estimate; a key list is exact
		if e.cfg.Scope.KeyList > 0 {
			about = ""
		}
		share := math.Floor(min(float64(scanned)/float64(exp), 1)*1000) / 10
		fmt.Fprintf(&b, "%s of %s%s keys (%.1f%%)", group(scanned), about, group(exp), share)
	} else {
		fmt.Fprintf(&b, "%s keys", group(scanned))
	}
	if module != "" {
		fmt.Fprintf(&b, " (at %s)", module)
	}
	elapsed := now.Sub(e.started)
	var rate float64
	if elapsed > 0 {
		rate = float64(scanned-e.baseline) / elapsed.Seconds()
		fmt.Fprintf(&b, " · %.0f keys/s", rate)
	}
	if left := e.cfg.ExpectedKeys - scanned; e.cfg.ExpectedKeys > 0 && rate > 0 {
		eta := time.Duration(float64(max(left, 0)) / rate * float64(time.Second))
		fmt.Fprintf(&b, " · ~%s left", eta.Round(time.Second))
	}
	for _, s := range []*side{e.primary, e.shadow} {
		used, max := s.limit.Used()
		if max >= 0 {
			fmt.Fprintf(&b, " · %s %d/%d requests per %s", s.name, used, max, s.budget.Per)
		} else {
			fmt.Fprintf(&b, " · %s %s requests", s.name, group(s.requests().Total))
		}
	}
	return b.String()
}

// group writes n with thousands separators: 1,234,567.
func group(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + group(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
