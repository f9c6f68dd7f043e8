package cfkv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/cloudflare/cloudflare-go/v6/option"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
)

// sdkCall is one SDK method call, given the options a try adds to it.
type sdkCall func(ctx context.Context, opts ...option.RequestOption) error

// retry runs try until it succeeds, fails for good, or the retries are
// spent, each try under a context of its own that RequestTimeout ends (the
// package doc says why the SDK's own retries are off).
func (s *Store) retry(ctx context.Context, try func(ctx context.Context) outcome) error {
	for attempt := 0; ; attempt++ {
		tctx, cancel := context.WithTimeoutCause(ctx, s.cfg.RequestTimeout, errTryTimeout)
		out := try(tctx)
		cancel()
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
		if err := clock.Sleep(ctx, s.cfg.Clock, wait); err != nil {
			return fmt.Errorf("%w (while waiting to retry after: %v)", err, out.err)
		}
	}
}

// send makes one try of call, whose answer the SDK decodes, in the try's
// context and classifies how it ended; the answer's success is checked on
// the way (checkEnvelope) before the SDK decodes it.
func (s *Store) send(ctx context.Context, op string, call sdkCall) outcome {
	var resp *http.Response
	err := call(ctx, option.WithResponseInto(&resp), option.WithMiddleware(checkEnvelope))
	return s.outcomeOf(ctx, op, resp, err)
}

// call is retry of send.
func (s *Store) call(ctx context.Context, op string, call sdkCall) error {
	return s.retry(ctx, func(ctx context.Context) outcome { return s.send(ctx, op, call) })
}

// callRaw is retry of a call whose answer the SDK hands over unread: it is
// read once, here, into body when not nil, its success checked (readEnvelope).
func (s *Store) callRaw(ctx context.Context, op string, body *[]byte, call sdkCall) error {
	return s.retry(ctx, func(ctx context.Context) outcome {
		var resp *http.Response
		err := call(ctx, option.WithResponseBodyInto(&resp))
		if err == nil {
			var raw []byte
			if raw, err = readEnvelope(resp); err == nil && body != nil {
				*body = raw
			}
		}
		return s.outcomeOf(ctx, op, resp, err)
	})
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
