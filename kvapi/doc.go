// Package kvapi serves the Workers KV REST API over any kv.Store.
//
// A Server is a net/http handler for the paths of the Cloudflare API v4 that
// Workers KV clients use, under
// /client/v4/accounts/{account}/storage/kv/namespaces/{namespace}/:
//
//	GET    values/{key}     the raw value, with an "expiration" header
//	PUT    values/{key}     raw body or multipart (value, metadata), with
//	                        ?expiration= or ?expiration_ttl=
//	DELETE values/{key}
//	GET    metadata/{key}
//	GET    keys             ?prefix= &limit= (10..1000) &cursor=
//	PUT    bulk             up to 10,000 {key, value, base64, expiration,
//	                        expiration_ttl, metadata}
//	POST   bulk/delete      up to 10,000 keys (and the older DELETE bulk)
//	POST   bulk/get         up to 100 keys; type text or json; withMetadata
//
// Responses carry Cloudflare's envelope (success, errors[{code, message}],
// messages, result, result_info) with the API's status codes and its Workers
// KV error codes: 10009 for a missing key (HTTP 404), 10013 for a missing
// namespace, 10028 for a list limit outside 10..1000, 10033/10034 for bad
// expirations, 10041 for a bad cursor, 10042 and 10030 for bad keys, 10024
// for a payload too large, 10047 for invalid metadata, 10022 for the
// per-key write rate, 10001 for a
// service failure, 10000 for a refused token, and the API's 7000-series
// codes for a route it does not serve. Keys arrive URL-encoded in
// the path and are decoded exactly once, so "a/../b", "?", "#", "%", spaces
// and any Unicode are ordinary keys.
//
// Over the memory backend the Server is the Workers KV emulator that the
// cfkv tests and the kv-emulator command use; over the dual-write store it
// is a proxy that any Workers KV REST client can be pointed at.
//
// # Metadata
//
// Over a store that is a kv.MetadataStore the server keeps Workers KV
// metadata on every path: the metadata field of a multipart PUT and of a
// bulk pair, GET metadata/{key}, each key of a listing (omitted when it has
// none) and bulk/get withMetadata. One rule checks it everywhere: one JSON
// value, compacted, at most 1024 bytes (HTTP 413, code 10047, beyond; 400
// with 10047 when it is not JSON); JSON null means none. A write without
// metadata clears it. Over a store that keeps none, a write that carries
// metadata is refused (400, 10047) rather than stored without it, and reads
// report null.
//
// Workers KV values are bytes, but bulk/get in "text" mode returns JSON
// strings, so a value that is not valid UTF-8 comes back with U+FFFD
// replacements there, as it does from Cloudflare; GET values/{key} always
// returns the exact bytes.
//
// # Faults
//
// Faults, all off by default and switchable while the server runs, make the
// server behave as Workers KV does on a bad day: added latency, the limit of
// one write per second per key (429 with Retry-After, or the key listed in
// unsuccessful_keys of a bulk write), injected 5xx answers (the next N, or a
// steady rate), list pages that come back empty with a cursor, and an
// eventual-consistency window.
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
