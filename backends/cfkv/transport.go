package cfkv

import "net/http"

// NewTransport returns the HTTP transport of a Store's own client, and of
// the proxy's client to its primary: net/http's default transport with two
// changes that concurrent callers of one API host gain from:
//
//   - as many idle connections kept per host as concurrent callers use
//     (64), instead of net/http's two, so that requests reuse connections
//     rather than open one each;
//   - no gzip asked for: a value comes as stored, and what bounds a
//     namespace's traffic is the API's request budget, not its bytes.
//
// It sets no timeout of its own: each try is bounded by RequestTimeout
// through its context (see Store.retry).
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = maxIdlePerHost
	t.DisableCompression = true
	return t
}

const maxIdlePerHost = 64
