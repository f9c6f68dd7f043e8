package report

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progressEvery is how often the progress line is redrawn.
const progressEvery = time.Second

// startProgress redraws a one-line status on cfg.Progress until the
// returned stop is called; stop waits for the goroutine and ends the line.
func (e *engine) startProgress() (stop func()) {
	w := e.cfg.Progress
	if w == nil {
		return func() {}
	}
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			t := e.cfg.Clock.NewTimer(progressEvery)
			select {
			case <-quit:
				t.Stop()
				return
			case <-t.C():
			}
			e.drawProgress(w)
		}
	}()
	return func() {
		close(quit)
		<-done
		e.drawProgress(w)
		fmt.Fprintln(w)
	}
}

// drawProgress writes the status line; it reads the committed counters
// under the lock and writes after releasing it.
func (e *engine) drawProgress(w io.Writer) {
	e.mu.Lock()
	scanned, module := e.scanned, e.module
	e.mu.Unlock()
	fmt.Fprint(w, "\r"+e.progressLine(scanned, module, e.cfg.Clock.Now())+"\x1b[K")
}

func (e *engine) progressLine(scanned int64, module string, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s keys", group(scanned))
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
