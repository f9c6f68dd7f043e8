package cfkv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/internal/h1"
)

// NewTransport returns the HTTP transport of a Store's own client, and of
// the proxy's client to its primary: HTTP/1.1 with each round trip on its
// caller's goroutine (package h1). net/http's Transport hands a request to a
// writing goroutine and its answer back from a reading one; at low load each
// hand-off can wake a sleeping thread, which costs a proxy more than its
// work, and the bookkeeping about 26 allocations a round trip. Beyond that:
//
//   - as many idle connections kept per host as concurrent callers use
//     (64), instead of net/http's two, so that requests reuse connections
//     rather than open one each;
//   - no gzip asked for: answers are read by their declared length into one
//     slice (a decompressed answer has none, and costs a decompressor each),
//     a value comes as stored, and what bounds a namespace's traffic is the
//     API's request budget, not its bytes;
//   - what h1 does not send itself (a request through a proxy from the
//     environment, one with Expect or Upgrade) goes to net/http's defaults
//     with the same two changes.
//
// It sets no timeout of its own: each try is bounded by RequestTimeout
// through its context, cancelled when the try's time is up (startTry),
// which h1 watches: it aborts the connection then.
func NewTransport() http.RoundTripper {
	fallback := http.DefaultTransport.(*http.Transport).Clone()
	fallback.MaxIdleConnsPerHost = maxIdlePerHost
	fallback.DisableCompression = true
	return h1.New(h1.Config{MaxIdlePerHost: maxIdlePerHost, Fallback: fallback})
}

// maxIdlePerHost is how many idle connections to Workers KV a client keeps.
const maxIdlePerHost = 64

// doer is what the SDK sends its requests through (option.WithHTTPClient
// takes any Do). It hands every response back to the Store untouched, as
// errHandedOver, so that the SDK neither reads a refusal's body nor parses
// its headers for a retry of its own (its retries are off); the Store reads
// and classifies every answer (send). It also sets the Authorization header
// from one slice made at New, where the SDK's header option makes one per
// request; net/http only reads a request's header values.
//
// A client that adds nothing to a request but the following of redirects
// (no cookie jar, no timeout) is bypassed: the request goes straight to its
// transport, without the client's copy of the headers for a redirect that
// Workers KV never answers. If an answer is a redirect after all, the
// request is sent again through the client, which follows it as it would
// have.
type doer struct {
	client *http.Client
	direct http.RoundTripper // client's transport, when the client may be bypassed
	auth   []string
}

// errHandedOver is how doer returns a response to the Store through the SDK.
var errHandedOver = errors.New("cfkv: the response is handed to the store")

func newDoer(client *http.Client, token string) *doer {
	d := &doer{client: client, auth: []string{"Bearer " + token}}
	if client.Jar == nil && client.Timeout == 0 {
		d.direct = client.Transport
		if d.direct == nil {
			d.direct = http.DefaultTransport
		}
	}
	return d
}

func (d *doer) Do(req *http.Request) (*http.Response, error) {
	req.Header["Authorization"] = d.auth
	if d.direct == nil {
		return handOver(d.client.Do(req))
	}
	resp, err := d.direct.RoundTrip(req)
	if err != nil || !isRedirect(resp) {
		return handOver(resp, err)
	}
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return handOver(resp, nil) // what the client returns when it cannot send the body again
		}
		if req.Body, err = req.GetBody(); err != nil {
			_ = resp.Body.Close()
			return nil, err
		}
	}
	_ = resp.Body.Close()
	return handOver(d.client.Do(req))
}

func handOver(resp *http.Response, err error) (*http.Response, error) {
	if err != nil {
		return nil, err
	}
	return resp, errHandedOver
}

// isRedirect reports an answer http.Client would follow.
func isRedirect(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return resp.Header.Get("Location") != ""
	}
	return false
}

// errTryTimeout is the cause of a try's context that RequestTimeout ended
// (its Err is context.Canceled); it matches context.DeadlineExceeded.
var errTryTimeout = fmt.Errorf("cfkv: the try's time is up: %w", context.DeadlineExceeded)

// startTry bounds one try by RequestTimeout, unless ctx ends before: the
// caller's own deadline serves then, at no cost (a nil *tryTimer). The
// SDK's request timeout is off: a try costs a cancelable context and a
// timer taken from a pool, not the SDK's timer, its context and the
// wrapping of the answer's body. The try ends with the timer's stop.
func (s *Store) startTry(ctx context.Context) (context.Context, *tryTimer) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= s.cfg.RequestTimeout {
		return ctx, nil
	}
	tctx, cancel := context.WithCancelCause(ctx)
	t := tryTimers.Get().(*tryTimer)
	t.mu.Lock()
	t.cancel = cancel
	t.mu.Unlock()
	t.timer.Reset(s.cfg.RequestTimeout)
	return tctx, t
}

// tryTimer ends a try's context with errTryTimeout when its time is up.
// Its timer is made once and serves one try after another, through
// tryTimers; one that fired is not put back, since its function may still
// be on its way to the try it was set for.
type tryTimer struct {
	timer  *time.Timer
	mu     sync.Mutex
	cancel context.CancelCauseFunc // the try's, while it runs
}

var tryTimers = sync.Pool{New: func() any {
	t := new(tryTimer)
	t.timer = time.AfterFunc(time.Hour, t.fire)
	t.timer.Stop()
	return t
}}

func (t *tryTimer) fire() {
	t.mu.Lock()
	cancel := t.cancel
	t.mu.Unlock()
	if cancel != nil {
		cancel(errTryTimeout)
	}
}

// stop ends the try: its context is cancelled, its timer kept for another
// unless it fired.
func (t *tryTimer) stop() {
	if t == nil {
		return
	}
	stopped := t.timer.Stop()
	t.mu.Lock()
	cancel := t.cancel
	t.cancel = nil
	t.mu.Unlock()
	cancel(nil)
	if stopped {
		tryTimers.Put(t)
	}
}

// callerErr is the error of the caller's own context, given a try's: nil
// while only RequestTimeout ended the try.
func callerErr(ctx context.Context) error {
	if context.Cause(ctx) == errTryTimeout {
		return nil
	}
	return ctx.Err()
}
