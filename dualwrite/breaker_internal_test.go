package dualwrite

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
)

var errStoreDown = errors.New("store down")

func testBreaker(t *testing.T, failures int) (*breaker, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Unix(1000, 0))
	var lost atomic.Uint64
	b := newBreaker(RoleShadow, BreakerConfig{FailuresToOpen: failures, OpenTimeout: time.Minute, HalfOpenRequests: 1},
		clk, make(chan BreakerEvent, 64), &lost, make(chan struct{}, 1))
	return b, clk
}

func outcome(b *breaker, now time.Time, err error) bool {
	ran, _ := b.run(now, func() error { return err })
	return ran
}

// Successes of a quiet breaker do not reach gobreaker (its mutex, its two
// readings of the wall clock); failures do, and a streak of them opens it
// exactly as before: one short of the threshold between successes never
// does, whichever path each outcome took.
func TestBreakerQuietPath(t *testing.T) {
	b, clk := testBreaker(t, 3)
	for range 100 {
		outcome(b, clk.Now(), nil)
	}
	if n := b.cb.Counts().Requests; n != 0 {
		t.Fatalf("gobreaker counted %d requests of a quiet breaker's successes, want 0", n)
	}
	for range 10 {
		outcome(b, clk.Now(), errStoreDown)
		outcome(b, clk.Now(), kv.ErrNotFound) // a read of a missing key: a success
		outcome(b, clk.Now(), errStoreDown)
		outcome(b, clk.Now(), kv.ErrInvalidKey) // excluded: counts nothing
		outcome(b, clk.Now(), errStoreDown)
		if b.isOpen(clk.Now()) {
			t.Fatal("opened on three failures with a success between them")
		}
		outcome(b, clk.Now(), nil)
	}
	if b.quiet.Load()&1 != 1 {
		t.Fatal("not quiet after a success reset the streak")
	}
	for range 3 {
		outcome(b, clk.Now(), errStoreDown)
	}
	if !b.isOpen(clk.Now()) {
		t.Fatalf("still closed after three failures in a row (gobreaker %v, counts %+v)", b.cb.State(), b.cb.Counts())
	}
	if outcome(b, clk.Now(), nil) {
		t.Fatal("an open breaker let an operation run")
	}
	// Past the open period the probe goes through gobreaker, closes it,
	// and the breaker is quiet again.
	clk.Advance(time.Minute)
	if !outcome(b, clk.Now(), nil) || b.cb.State() != gobreaker.StateClosed {
		t.Fatalf("the probe did not close the breaker: %v", b.cb.State())
	}
	if b.quiet.Load()&1 != 1 {
		t.Fatal("not quiet after the probe closed the breaker")
	}
}

// Outcomes from many lanes at once: whatever their interleaving, a quiet
// breaker is one gobreaker has closed with no failure counted. Were the
// quiet bit set over a failure counted meanwhile, the streak would never
// be reset by the successes that skip gobreaker, and the breaker would
// open on fewer consecutive failures than configured.
func TestBreakerQuietOnlyWhenGobreakerIsClean(t *testing.T) {
	for round := range 200 {
		b, clk := testBreaker(t, 1000)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(round), uint64(g)))
				for range 200 {
					var err error
					if r.IntN(4) == 0 {
						err = errStoreDown
					}
					outcome(b, clk.Now(), err)
				}
			}()
		}
		wg.Wait()
		if b.quiet.Load()&1 == 1 {
			if c := b.cb.Counts(); b.cb.State() != gobreaker.StateClosed || c.ConsecutiveFailures != 0 {
				t.Fatalf("round %d: quiet while gobreaker is %v with %d consecutive failures", round, b.cb.State(), c.ConsecutiveFailures)
			}
		}
	}
}

// A failure counted between a success's look at gobreaker and its setting
// of the quiet bit leaves the breaker not quiet: the word moved on.
func TestBreakerFailureBetweenLookAndCalm(t *testing.T) {
	b, clk := testBreaker(t, 5)
	outcome(b, clk.Now(), errStoreDown) // not quiet: one failure counted
	w := b.quiet.Load()
	if _, err := b.cb.Execute(func() (struct{}, error) { return struct{}{}, nil }); err != nil {
		t.Fatal(err)
	}
	clean := b.clean() // the success reset the streak
	b.fail(errStoreDown)
	b.calm(w, clean)
	if b.quiet.Load()&1 == 1 {
		t.Fatalf("quiet with gobreaker counting %d consecutive failures", b.cb.Counts().ConsecutiveFailures)
	}
}
