package cfkv

import "net/http"

// NewTransport returns the HTTP transport of a Store's own client, and of
// the proxy's client to its primary: net/http's default transport keeping
// 64 idle connections per host (not two), so that concurrent callers reuse
// connections rather than open one each, and asking for no gzip: what bounds
// a namespace's traffic is the API's request budget, not its bytes. It sets
// no timeout of its own: each try is bounded by RequestTimeout (Store.retry).
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	t.DisableCompression = true
	return t
}
