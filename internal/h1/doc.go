// Package h1 is an http.RoundTripper for HTTP/1.1 that runs each round trip
// on the caller's goroutine: it takes an idle connection or dials one,
// writes the request, reads the answer and returns. net/http's Transport
// hands every request to a writing goroutine and every answer back from a
// reading goroutine; when a process is idle between requests each hand-off
// can wake a sleeping thread, which costs more than the work at low load,
// and its bookkeeping costs about 28 allocations a round trip. A proxy that
// makes one call to its primary per request pays that on every request.
//
// It speaks HTTP/1.1 only, on purpose: a proxy's calls to one API host are
// short request-answer exchanges over a few kept-alive connections, where
// HTTP/2's multiplexing buys nothing and its framing costs goroutines of its
// own. A TLS handshake offers only "http/1.1" by ALPN.
//
// What it promises:
//
//   - No goroutine per request or per connection. Dialing, the TLS
//     handshake, writing and reading all happen in RoundTrip or in the
//     response body's Read, on the caller's goroutine. An idle connection
//     that the server closed is found when it is next used (see retries),
//     not by a goroutine watching it.
//   - Contexts: the request context's deadline is the connection's deadline
//     for the round trip and for the body's reads; a context that can be
//     cancelled (with a deadline or without) is watched with
//     context.AfterFunc, which sets a past deadline on the connection so
//     that a blocked write or read returns at once. The error is then the
//     context's (errors.Is context.Canceled or context.DeadlineExceeded),
//     and the connection is closed, never pooled.
//   - Retries: a request written on a reused connection that fails before
//     any byte of the answer arrived (a write error, or EOF or reset while
//     waiting for the status line: the server had closed the idle
//     connection) is sent once more on a fresh connection, when it can be
//     replayed: no body, http.NoBody, or GetBody set. The server may then
//     see a request twice if it read it and closed without answering; the
//     Workers KV calls this package serves are idempotent. Otherwise the
//     error is returned.
//   - Pooling: a connection goes back to the idle pool when its answer's
//     body has been read to EOF (a body-less answer, HEAD, 204 and 304, at
//     once) and neither side asked to close (resp.Close, req.Close). A body
//     closed before EOF is drained of what has already arrived, up to
//     DrainLimit bytes and without waiting on the network; if that reaches
//     EOF the connection is pooled, else closed. Idle connections are kept
//     newest first, at most Config.MaxIdlePerHost per host; one idle longer
//     than Config.IdleTimeout is closed when the pool next looks at that
//     host, never reused. CloseIdleConnections closes them all.
//   - Bodies stream both ways: the request body is copied to the
//     connection as the caller's reader yields it, the answer's body is
//     read from the connection as the caller reads it; nothing here holds
//     a whole body.
//   - Response headers larger than MaxHeaderBytes are an error, as in
//     net/http; 1xx answers other than 101 are skipped; a 101 to a request
//     that asked for no upgrade is ErrProtocol.
//
// What it does not do, and hands to Config.Fallback instead (by default a
// clone of http.DefaultTransport): requests that Config.Proxy (by default
// http.ProxyFromEnvironment) sends through a proxy, schemes other than http
// and https, and requests that need what it does not implement: Expect:
// 100-continue, and Upgrade. It asks for no compression and decodes none:
// an answer's body reaches the caller as the server sent it.
package h1
