// Package cfkv is the kv.Store of a Cloudflare Workers KV namespace, over
// the REST API with cloudflare-go v6. It imports only the SDK's kv and
// option packages: the root package compiles every Cloudflare service.
//
// The SDK is used as designed: it builds every request (path, query, its
// headers, the token's made once for option.WithHeader), sends it through
// the Store's *http.Client, decodes the answers whose types carry what kv
// needs (a list's keys, expiries, metadata and cursor; a bulk write's
// unsuccessful keys) and types every refusal with an envelope as its
// *cloudflare.Error. The Store maps that error by Cloudflare's codes: 404
// with code 10009 is kv.ErrNotFound (a missing namespace, 10013, is not),
// the API's validation codes are the contract's sentinels (see APIError),
// 429 and 5xx are retried. The HTTP client is NewTransport's unless
// Config.HTTPClient says otherwise: net/http's Transport with 64 idle
// connections per host and no compression.
//
// What the Store still does by hand, and why:
//
//   - keys are escaped as one path segment (url.PathEscape): the SDK pastes
//     them into the path as they are, so "a/../b", "?", "#", "%", spaces
//     would change the request;
//   - a value's GET answer is read raw (the SDK hands it over as an
//     *http.Response by design): its bytes, and its expiry from the
//     expiration header; a JSON envelope there with success:false is a
//     refusal, not a value;
//   - HTTP 200 with success:false, which the SDK passes as a success, is
//     turned into the SDK's own typed error (and a 2xx answer that is no
//     envelope at all into an APIError): by a middleware where the SDK
//     decodes the answer, and where it need not (a write's answer, whose
//     result kv does not use, and the raw reads below) the SDK hands the
//     answer over unread and it is read once, here, its success checked:
//     docs/performance.md has what the SDK's decoding of it cost;
//   - a refusal whose body is no envelope (a proxy's HTML 502, an edge's
//     plain 413) is one the SDK cannot type: it returns its decoding
//     failure, and the Store reads the status from the answer
//     (option.WithResponseInto);
//   - bulk/get's answer is parsed from its raw JSON, because the SDK's
//     typed result is nil as soon as one key is missing; a metadata GET's
//     too, because the SDK decodes metadata into an interface{} whose
//     numbers are float64;
//   - a bulk write's or delete's body is encoded here with encoding/json:
//     the SDK's JSON encoder takes time quadratic in an array's length (1.9
//     s for 10,000 keys), and its types take a pair's metadata as an
//     interface{} where the Store has the JSON value it is;
//   - a put's body is the value itself (option.WithRequestBody), or with
//     metadata one multipart form with the metadata as one JSON text field:
//     the SDK's form encoder flattens a JSON object into a field per member;
//   - pagination is by hand, one request per List call: an empty page with
//     a cursor does not end a listing (the SDK's ListAutoPaging stops
//     there), and limits 1..9, below the API's minimum of 10, work as the
//     contract says (see Store.List);
//   - the SDK's own retries (ten by default, up to 30 s apart) and its
//     request timeout are off: each try runs under context.WithTimeout of
//     RequestTimeout, a few short retries honour Retry-After, and a call
//     that is still refused (429, 5xx) or cannot connect returns an error
//     matching kv.ErrUnavailable whose kv.UnavailableError says when to
//     retry.
//
// A Store is a kv.MetadataStore, and metadata costs no request of its own
// (the REST API allows 1,200 per 5 minutes): PutEntry with metadata is one
// multipart PUT; GetEntry is one bulk/get of the key withMetadata, which
// carries the value, the expiry and the metadata (a value that is not
// UTF-8 costs a second request, its own GET, since bulk/get returns text,
// and a bulk/get refused as a bad request falls back to the value's and the
// metadata's own GETs); Get stays one GET. Bulk reads take 100 keys a
// request and bulk writes 10,000 pairs, each with its metadata; the Store
// splits larger batches. A bulk answer that the HTTP client's transport
// refuses to read whole (a memory budget's Transport, whose error matches
// kv.ErrTooLarge: values that are not UTF-8 come escaped, six times their
// size) is asked for again in halves, down to a key read alone by its own
// GETs. The API token is sent in the Authorization header
// and nowhere else: it is absent from errors and from the formatted Config
// and Store.
//
// For a command, ConfigFromEnv reads CLOUDFLARE_ACCOUNT_ID,
// CLOUDFLARE_API_TOKEN, CLOUDFLARE_KV_NAMESPACE_ID and, optionally,
// CLOUDFLARE_BASE_URL. Tests point BaseURL at the kvapi package's server.
package cfkv
