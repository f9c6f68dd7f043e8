package cfkv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// retry runs try until it succeeds, fails for good, or the retries are
// spent. The SDK's own retries are off (up to ten, waiting up to 30 s each:
// minutes on an outage); these are few and short, and honour Retry-After.
// What is still refused at the end is kv.ErrUnavailable, with the server's
// retry hint when it gave one.
func (s *Store) retry(ctx context.Context, try func(ctx context.Context) outcome) error {
	for attempt := 0; ; attempt++ {
		tctx, t := s.startTry(ctx)
		out := try(tctx)
		t.stop()
		if !out.retry {
			return out.err
		}
		if attempt >= s.cfg.MaxRetries {
			return kv.Unavailable(backendName, out.retryAfter, out.err)
		}
		wait := s.backoff(attempt)
		if out.retryAfter > 0 {
			if out.retryAfter > s.cfg.MaxRetryWait {
				// Waiting would hold the caller longer than we promise:
				// hand the server's delay to the caller instead.
				return kv.Unavailable(backendName, out.retryAfter, out.err)
			}
			wait = out.retryAfter
		}
		if err := s.sleep(ctx, wait); err != nil {
			return fmt.Errorf("%w (while waiting to retry after: %v)", err, out.err)
		}
	}
}

// backoff is the wait before retry attempt+1 when the server gave no hint:
// RetryBackoff doubled per attempt, capped, with half of it jittered so
// that callers that failed together do not retry together.
func (s *Store) backoff(attempt int) time.Duration {
	d := s.cfg.RetryBackoff << min(attempt, 20)
	if d <= 0 || d > s.cfg.MaxRetryWait {
		d = s.cfg.MaxRetryWait
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// sleep waits d on the store's clock, or until ctx ends.
func (s *Store) sleep(ctx context.Context, d time.Duration) error {
	t := s.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
