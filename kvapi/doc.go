// Package kvapi serves the Workers KV REST API over any kv.Store: the front
// of the emulator (over memory) and of the proxy (over the dual-write
// store), which any Workers KV REST client can be pointed at.
//
// # Routes
//
// A Server is a net/http handler for the paths of the Cloudflare API v4
// that Workers KV clients use, under /client/v4/:
//
//	GET    user/tokens/verify          the token check ({"status":"active"})
//	GET    memberships, accounts       the one account served (wrangler finds it here)
//	GET    user                        403 9109, as for a token without user details
//	GET    accounts/{a}/storage/kv/namespaces       ?page= &per_page= (1..1000) &order= &direction=
//	POST   accounts/{a}/storage/kv/namespaces       {"title"}: create *
//	GET    .../namespaces/{ns}
//	PUT    .../namespaces/{ns}         {"title"}: rename *
//	DELETE .../namespaces/{ns}         delete *
//	GET    .../namespaces/{ns}/values/{key}    the raw value, with an "expiration" header
//	PUT    .../values/{key}            raw body or multipart (value, metadata), with
//	                                   ?expiration= or ?expiration_ttl=
//	DELETE .../values/{key}
//	GET    .../metadata/{key}
//	GET    .../keys                    ?prefix= &limit= (10..1000) &cursor=
//	PUT    .../bulk                    up to 10,000 {key, value, base64, expiration,
//	                                   expiration_ttl, metadata}
//	POST   .../bulk/delete             up to 10,000 keys (and the older DELETE bulk)
//	POST   .../bulk/get                1..100 distinct keys; type text or json; withMetadata
//
// (*) only on a Server that owns its namespaces (Config.NewStore), as the
// emulator does; elsewhere 405. HEAD is served wherever GET is, without the
// body; a method a route does not serve is 405 with an Allow header. Keys
// arrive URL-encoded in the path and are decoded exactly once, so "a/../b",
// "?", "#", "%", spaces and any Unicode are ordinary keys; a key in a JSON
// body that is not valid UTF-8 is refused (10042), never decoded with
// U+FFFD replacements that would make two keys one. Every route's keys, so
// decoded, pass one check; on the proxy's front (Config.RefuseReserved) it
// refuses kvshadow's own keys, which the emulator, standing in for Workers KV,
// serves as Workers KV does.
//
// # Answers
//
// Every answer but a raw value is Cloudflare's envelope (success,
// errors[{code, message, error_chain}], messages, result, result_info),
// refusals included, with the API's status codes and error codes:
//
//	400 9106            no Authorization header
//	400 6003 (6111)     an Authorization header that is not a bearer token
//	403 10000           a token that is not the server's
//	404 10009           a missing key ("get: 'key not found'")
//	404 10013           a missing namespace; 400 10011 a malformed namespace ID
//	400 10014 / 10019   a namespace title taken / missing
//	400 10018           a create past MaxNamespaces (1000)
//	404 7000 / 7003     a route / an account the server does not serve
//	405 7001            a method the route does not serve (with Allow)
//	400 10028           a list limit outside 10..1000
//	400 10033 / 10034   a bad expiration / expiration_ttl
//	400 10041           a cursor the server did not issue
//	400 10042, 414 10030  an illegal key; a key (or a list prefix) over 512 bytes; on a
//	                    front for clients (Config.RefuseReserved: kvshadow-proxy's),
//	                    any key or list prefix under kv.ReservedPrefix ("Illegal key
//	                    name: keys under "__kvshadow:" are kvshadow's own; ...")
//	400 10012           a bulk value that is not base64
//	413 10047, 400 10047  metadata over 1024 bytes; not JSON, or over a store without metadata
//	413 10024           a body, a value or a bulk/get answer over its limit
//	400 10029           anything else malformed: bad JSON, trailing data after
//	                    the document, too many or duplicate keys, no key
//	                    ("You must request a minimum of 1 key"), and what net/http
//	                    refuses before any handler (431, 501, 417 keep their status)
//	429 10022           the per-key write rate (a fault mode), with Retry-After
//	503 10001           an unavailable store, or too many requests at once, with Retry-After;
//	                    a store that did not answer before the request's deadline, with
//	                    Retry-After 1 (a write's outcome is then unknown; writes are idempotent)
//	502 10001           a store that refuses the server's own credentials (kv.ErrAccessDenied:
//	                    a proxy whose Workers KV token was revoked), saying so
//	500 10001           any other store failure; its message is never forwarded
//
// # Metadata
//
// Over a store that is a kv.MetadataStore the server keeps Workers KV
// metadata on every path: the metadata field of a multipart PUT and of a
// bulk pair, GET metadata/{key}, each key of a listing (omitted when it has
// none) and bulk/get withMetadata. One rule checks it everywhere: one JSON
// value, compacted, at most 1024 bytes; JSON null means none. A write
// without metadata clears it. Over a store that keeps none, a write that
// carries metadata is refused rather than stored without it, and reads
// report null.
//
// Workers KV values are bytes, but bulk/get in "text" mode returns JSON
// strings, so a value that is not valid UTF-8 comes back with U+FFFD
// replacements there, as it does from Cloudflare; GET values/{key} always
// returns the exact bytes.
//
// # Serving: the hardened front
//
// NewHTTPServer wraps a Server in the HTTPServer that the emulator and the
// proxy serve through, with the same defaults:
//
//   - header, read, write and idle timeouts; a body's reading is bounded by
//     the slow-body guard's deadlines, never past ReadTimeout, from its first
//     byte whether the handler reads it or not (one deadline fewer a request
//     than net/http's own ReadTimeout);
//   - a deadline on every request's context a margin before the connection's
//     write deadline (a tenth of WriteTimeout, at most 5 s: 1 min 55 s by
//     default), so that a store call that would outlive the write deadline
//     ends with context.DeadlineExceeded in time for the client to get 503
//     10001 with Retry-After rather than a torn connection (a store that
//     ignores its context still runs past it);
//   - a 64 KiB header limit;
//   - at most 64 requests at once (503 10001 with Retry-After beyond), of
//     which one client (its remote address) holds at most three quarters;
//   - a body that averages less than 1 KiB/s after 10 s ends with 408;
//   - at most 512 open connections on the listener (past it 503, and a log
//     line);
//   - one memory budget (Config.Memory) for what the requests hold, past
//     which a request waits 2 s and then gets 503 with Retry-After;
//   - a client token required unless the caller says, in so many words
//     (ServeConfig.Unauthenticated), that it runs without one on loopback,
//     where it refuses (403) what a web page could send it: a Host that is
//     not a loopback name or address (DNS rebinding), an Origin or
//     Sec-Fetch-Site of another origin (CheckLocal);
//   - Cloudflare's envelope in place of net/http's plain-text refusals.
//
// Within a Server, every body has a limit, refused before reading when
// declared over it and cut off at it otherwise: 25 MiB for a raw value, 26
// MiB for a multipart PUT, 100 MiB for a bulk write or delete, 1 MiB for a
// bulk/get request, 64 KiB elsewhere (GET, HEAD and DELETE of a value
// included); bulk bodies are decoded one element at a time and refused at
// the element past the count limit; bulk/get answers at most 25 MiB of
// values (Cloudflare's own simulator's limit), encoding them as it writes
// them. A Server served some other way (httptest, a service's own
// http.Server) has its body limits and its memory budget but none of the
// rest.
//
// # Faults
//
// Faults, all off by default and switchable while the server runs, make the
// server behave as Workers KV does on a bad day: added latency, the limit of
// one write per second per key (429 with Retry-After, or the key listed in
// unsuccessful_keys of a bulk write), injected 5xx answers (the next N, or a
// steady rate), list pages that come back empty with a cursor, and an
// eventual-consistency window. What the faults remember (each key's last
// write, what each edge location cached) is bounded in entries and bytes
// (MaxFaultEntries, MaxFaultBytes); past a bound stale entries are forgotten
// first, then any others, which makes a fault more lenient, never the store wrong.
//
// The consistency window follows Workers KV's caching model. A request that
// carries the header X-Kvapi-Location with a non-empty name is served by
// that edge location; requests without it are served by the central store
// and see every write at once. A location caches each key it reads, the value
// or the miss, for the window: until the entry is that old, reads there see
// the old value or the cached "not found", whatever was written since. A
// write made through a location updates that location's cache, so a location
// reads its own writes. Listing is served by the central store.
package kvapi
