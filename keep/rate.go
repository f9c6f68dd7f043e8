package keep

import (
	"fmt"
	"sync"
	"time"
)

// rate is a Store's bound on the sides it keeps a minute: a bucket of
// Config.Rate tokens that fills over a minute, a side taking one and one
// more per whole MiB of its value.
type rate struct {
	mu     sync.Mutex
	per    float64 // tokens a minute; 0: no bound
	tokens float64
	last   time.Time
}

func newRate(c Config) *rate {
	switch {
	case c.Rate < 0:
		return &rate{}
	case c.Rate == 0:
		return &rate{per: DefaultRate, tokens: DefaultRate}
	}
	return &rate{per: float64(c.Rate), tokens: float64(c.Rate)}
}

// take takes what a side of size bytes costs at now, or refuses with
// ErrRate.
func (r *rate) take(now time.Time, size int64) error {
	if r.per == 0 {
		return nil
	}
	cost := 1 + float64(size>>20)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.IsZero() && now.After(r.last) {
		r.tokens = min(r.per, r.tokens+now.Sub(r.last).Minutes()*r.per)
	}
	r.last = now
	// A side that costs more than a whole minute goes when the bucket is
	// full, and empties it.
	if r.tokens < min(cost, r.per) {
		return fmt.Errorf("%w (%d a minute, a side counting once and once more per MiB)", ErrRate, int(r.per))
	}
	r.tokens = max(r.tokens-cost, 0)
	return nil
}
