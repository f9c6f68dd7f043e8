package kvapi

// The error codes the server answers with: Workers KV's, from Cloudflare's
// published table of KV API codes (100xx); the API's own for routing
// (7000s) and for authentication (6003, 6111, 9106), as Cloudflare answers
// them. The package documentation lists which status goes with which.
const (
	CodeAuthentication    = 10000 // "Authentication error" (HTTP 403)
	CodeUnavailable       = 10001 // service temporarily unavailable (5xx)
	CodeKeyNotFound       = 10009 // HTTP 404
	CodeNamespaceID       = 10011 // malformed namespace ID
	CodeMalformedValue    = 10012 // a bulk value that is not base64
	CodeNoNamespace       = 10013 // namespace not found (HTTP 404)
	CodeTooManyWrites     = 10022 // the per-key write rate (HTTP 429)
	CodeTooLarge          = 10024 // payload too large (HTTP 413)
	CodeInvalidLimit      = 10028 // list limit outside 10..1000
	CodeInvalidRequest    = 10029 // malformed body, too many keys in a bulk call
	CodeKeyTooLong        = 10030 // HTTP 414
	CodeExpiration        = 10033 // invalid expiration
	CodeExpirationTTL     = 10034 // invalid expiration_ttl
	CodeInvalidCursor     = 10041 // invalid "list keys" cursor
	CodeIllegalKey        = 10042 // illegal key name
	CodeMetadata          = 10047 // invalid metadata
	CodeNoRoute           = 7000  // no route for the URI
	CodeBadAccount        = 7003  // unknown account identifier
	CodeMethod            = 7001  // method not allowed for the route
	CodeMissingAuth       = 9106  // no Authorization header (HTTP 400)
	CodeNoUserAccess      = 9109  // a token that may not read user details (GET /user)
	CodeInvalidHeaders    = 6003  // malformed request headers (HTTP 400)
	CodeBadAuthFormat     = 6111  // in 6003's error chain: a malformed Authorization header
	CodeNamespaceTitle    = 10014 // a namespace with that title exists
	CodeMissingTitle      = 10019 // a namespace needs a title
	CodeTooManyNamespaces = 10018 // the account holds MaxNamespaces
)

// The request limits of the API.
const (
	MinListLimit   = 10
	MaxListLimit   = 1000
	MaxBulkWrite   = 10_000
	MaxBulkGet     = 100
	minExpirySecs  = 60
	notFoundReason = "get: 'key not found'"
)
