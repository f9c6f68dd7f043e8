// Package ingest is the tee's endpoint in kvshadow-proxy: an HTTP handler
// that takes the batches a bot's Worker sends in tee mode (workers/, the
// kvshadowTee object) and hands them, decoded and checked, to a Sink.
//
// In tee mode the bot writes Workers KV through its own binding, so the
// primary's part of each write is done before the proxy hears of it. After
// its response, through ctx.waitUntil, the Worker sends one batch per
// invocation:
//
//	POST <mount>/ingest
//	Authorization: Bearer <token>
//	Content-Type: application/json
//
//	{"namespace": "<namespace ID>",
//	 "copies": [{"key": "wordle:games:42", "value": "<base64>",
//	             "expiration": 1796115512, "metadata": {"any": "JSON"},
//	             "acked_at": 1796115000123, "generation": 7},
//	            {"key": "wordle:old", "deleted": true, "acked_at": 1796115000124}],
//	 "reads":  [{"key": "wordle:games:7", "found": true, "sha256": "<64 hex>",
//	             "length": 312, "expiration": 0, "read_at": 1796115000100}]}
//
// expiration is the absolute expiry in seconds since the epoch (0 or absent:
// none); acked_at and read_at are milliseconds since the epoch, when the
// binding acknowledged the write or returned the read. generation (optional;
// 0 or absent: unknown) is the stage generation the tee routed the write
// on; a tee sends it only to a proxy whose stage answer has one. A read that found
// nothing has found false and no digest. The answer is 200 with
// {"copies": n, "reads": m, "reads_ignored": k} (m reads taken for
// comparison with the shadow, k not: the stage compares none, or the
// proxy had no room for them), or an error body
// {"error": {"code": "<word>", "message": "..."}} with 400 (a batch that
// breaks a rule: nothing of it is handed on; code invalid_key for a key
// that is not valid UTF-8, raw or as a lone surrogate escape, which would
// otherwise become U+FFFD and collide with another key; reserved_key for a
// key, of a copy or a read, under "__kvshadow:", kvshadow's own, which no tee
// sends), 401, 404 (unknown
// namespace), 405, 409 (the stage takes no copies: the tee then reads the
// stage again), 413 (over a cap), 415, or 503 with Retry-After. Every 4xx
// is counted by its code (Handler.Refused). From live on a copy is late:
// the dual-write store orders it and never drops it, or, arriving more
// than a fence interval after the flip, refuses it whatever its acked_at
// says (dualwrite's Forged copies); either way the batch is answered 200.
//
//	GET <mount>/stage[?namespace=<ID>]
//
// answers {"stage": "...", "generation": n, "authoritative":
// "primary"|"shadow", "route": "proxy"|"binding", "lease_ms": n,
// "account": "...", "namespace": "...", "exclude_prefixes": ["__kvshadow:",
// ...]} from a StageReader, which the tee caches: route says whether it
// sends its reads and writes through the proxy (from the handover stage on)
// or through its binding, lease_ms how long from its request the tee may
// route by the answer (the proxy's fence is derived from it), and
// exclude_prefixes the key prefixes the proxy leaves out of the migration
// (--exclude-prefix), whose copies and reads the tee does not send. A copy
// of such a key that arrives anyway is dropped and counted
// (dualwrite.Stats.Excluded), never an error; one under "__kvshadow:"
// refuses its batch (reserved_key, above).
//
// A proxy over dual-write stores mounts it with the DualWrite sink, which
// is also its StageReader:
//
//	sink := &ingest.DualWrite{Stores: storeOf, Account: account}
//	h, err := ingest.New(sink, ingest.Config{Token: clientToken, DefaultNamespace: ns, Stage: sink})
//	mux.Handle("/kvshadow/v1/", h) // beside the REST API at /client/v4/
//
// # Guarantees
//
// A batch is checked whole before any of it reaches the Sink: keys by the
// contract's key rules, values at most kv.MaxValueSize after base64,
// metadata by kv.ValidateMetadata, digests 32 bytes of hex, times within
// bounds, counts and the body within the Config's caps (the body is read
// through a hard limit, as a stream, and trailing data is an error). The
// Sink gets the copies in the order the tee sent them, which is the order
// the binding acknowledged them within one invocation; copies from
// concurrent invocations can arrive in any order, which is why each carries
// its acknowledged-at time and why the Sink's settling verifies every key
// against the primary after the consistency window. No value, token or key
// is logged or returned in an error.
package ingest
