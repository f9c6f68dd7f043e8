// Package cfkv is the kv.Store of a Cloudflare Workers KV namespace, over
// the REST API with cloudflare-go v6. It imports only the SDK's kv and
// option packages: the root package compiles every Cloudflare service.
//
// The SDK is used for what it does well (paths, authentication, request
// bodies) and corrected where it does not fit the kv contract:
//
//   - keys are escaped as one path segment, so "a/../b", "?", "#", "%",
//     spaces and any Unicode reach the API as themselves;
//   - every response is read raw: HTTP 200 with success:false is an error,
//     404 with code 10009 is kv.ErrNotFound, the API's validation codes are
//     the contract's sentinels (see APIError), and bulk/get is parsed here
//     because the SDK's typed result is nil when any key is missing;
//   - pagination is by hand, one request per List call: an empty page with
//     a cursor does not end a listing, and limits 1..9, below the API's
//     minimum of 10, work as the contract says (see Store.List);
//   - the SDK's own retries (ten, up to 30 s apart) are off; a few short
//     ones honour Retry-After, and a call that is still refused (429, 5xx)
//     or cannot connect returns an error matching kv.ErrUnavailable whose
//     kv.UnavailableError says when to retry.
//
// What the SDK costs a request is cut where its options allow, for a proxy
// that makes one per call it serves: its options are made once per Store
// (the token's header too, set from one shared value), its telemetry
// headers are deleted before it copies the request, its request timeout is
// off (each try is bounded by RequestTimeout through its context, or by the
// caller's own deadline when that comes sooner, with no timer of the
// SDK's), and the requests go through a doer of this package that hands
// every answer back untouched, so that the SDK neither parses a refusal nor
// looks in an answer's headers for a retry of its own. The doer goes to the
// HTTP client's transport directly when the client adds nothing but the
// following of redirects, which Workers KV does not answer (a redirect is
// still followed). NewTransport is the transport a Store's own client uses:
// HTTP/1.1 with each round trip on the caller's goroutine (package
// internal/h1), since net/http's Transport hands every request to a writing
// goroutine and its answer back from a reading one, and at a proxy's low
// load those hand-offs wake sleeping threads (futex) and cost about 26
// allocations a round trip; a caller's own HTTPClient is used as given.
// HTTP/1.1 only, on purpose: a few kept-alive connections serve one API
// host as well as HTTP/2's multiplexing, without its goroutines.
// What stays is the SDK's own making of each request, which no option
// reaches: the path formatted, the request built with its ten default
// headers, parsed against the base URL and copied for the try (46
// allocations a value GET); a value PUT also encodes its parameters as a
// multipart form and its query, which the body option then replaces (65).
//
// A Store is a kv.MetadataStore, and metadata costs no request of its own
// (the REST API allows 1,200 per 5 minutes): PutEntry with metadata is one
// multipart PUT, the metadata one JSON text field rather than the SDK's
// flattened form fields; GetEntry is one bulk/get of the key withMetadata,
// which carries the value, the expiry and the metadata (a value that is not
// UTF-8 costs a second request, its own GET, since bulk/get returns text,
// and a bulk/get refused as a bad request falls back to the value's and the
// metadata's own GETs);
// Get stays one GET. Bulk reads take 100 keys a request and bulk writes
// 10,000 pairs, each with its metadata; the Store splits larger batches. A
// bulk answer that the HTTP client's transport refuses to read whole (a
// memory budget's Transport, whose error matches kv.ErrTooLarge: values
// that are not UTF-8 come escaped, six times their size) is asked for
// again in halves, down to a key read alone by its own GETs. The API token is sent in the Authorization
// header and nowhere else: it is absent from errors and from the formatted
// Config and Store.
//
// For a command, ConfigFromEnv reads CLOUDFLARE_ACCOUNT_ID,
// CLOUDFLARE_API_TOKEN, CLOUDFLARE_KV_NAMESPACE_ID and, optionally,
// CLOUDFLARE_BASE_URL. Tests point BaseURL at the kvapi package's server.
package cfkv
