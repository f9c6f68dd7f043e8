package kvapi

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
)

// LocationHeader names the edge location a request is served by; see the
// package documentation on the consistency window.
const LocationHeader = "X-Kvapi-Location"

// Config configures a Server.
type Config struct {
	// Namespaces maps each namespace ID the server serves to its store. It
	// must hold at least one.
	Namespaces map[string]kv.Store
	// AccountID is the account the server answers for; empty accepts any.
	AccountID string
	// Token, when set, must come as "Authorization: Bearer <Token>" on every
	// request; empty turns the check off.
	Token string
	// Clock checks expirations and paces the faults; nil is the system
	// clock. Share it with the stores' clock so both agree on "now".
	Clock clock.Clock
	// Faults are the fault switches; nil means a set of its own, all off.
	// Server.Faults returns them either way.
	Faults *Faults
}

// ErrConfig reports a Config that New refuses.
var ErrConfig = errors.New("kvapi: invalid config")

// identifier is what the server accepts as an account or namespace ID:
// Cloudflare's are 32 hex digits; the emulator allows readable names too.
var identifier = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Server is the Workers KV REST API handler. It is safe for concurrent use.
type Server struct {
	namespaces map[string]kv.Store
	account    string
	token      []byte
	clock      clock.Clock
	faults     *Faults
	requests   atomic.Int64
	limiter    writeLimiter
	locations  locations
}

var _ http.Handler = (*Server)(nil)

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if len(cfg.Namespaces) == 0 {
		return nil, fmt.Errorf("%w: no namespaces", ErrConfig)
	}
	for id, st := range cfg.Namespaces {
		if !identifier.MatchString(id) {
			return nil, fmt.Errorf("%w: namespace ID %q must match %s", ErrConfig, id, identifier)
		}
		if st == nil {
			return nil, fmt.Errorf("%w: namespace %q has a nil store", ErrConfig, id)
		}
	}
	if cfg.AccountID != "" && !identifier.MatchString(cfg.AccountID) {
		return nil, fmt.Errorf("%w: account ID %q must match %s", ErrConfig, cfg.AccountID, identifier)
	}
	f := cfg.Faults
	if f == nil {
		f = &Faults{}
	}
	return &Server{
		namespaces: maps.Clone(cfg.Namespaces),
		account:    cfg.AccountID,
		token:      []byte(cfg.Token),
		clock:      clock.OrReal(cfg.Clock),
		faults:     f,
	}, nil
}

// Faults returns the server's fault switches.
func (s *Server) Faults() *Faults { return s.faults }

// Requests returns how many API requests the server has received, failed
// ones included: the unit in which Workers KV bills and rate-limits.
func (s *Server) Requests() int64 { return s.requests.Load() }

// String names the server without its token.
func (s *Server) String() string {
	return fmt.Sprintf("kvapi.Server{account: %q, namespaces: %d, auth: %t}", s.account, len(s.namespaces), len(s.token) > 0)
}

// request is one routed API call.
type request struct {
	ns       string
	store    kv.Store
	endpoint string // "values", "metadata", "keys", "bulk", "bulk/delete", "bulk/get"
	key      string // for values and metadata
	location string
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if !s.faults.delay(r.Context(), s.clock) {
		writeError(w, errorf(http.StatusServiceUnavailable, CodeUnavailable, "service temporarily unavailable: request cancelled"))
		return
	}
	if e, ok := s.faults.injected(); ok {
		writeError(w, e)
		return
	}
	if !s.authorized(r) {
		writeError(w, errorf(http.StatusForbidden, CodeAuthentication, "Authentication error"))
		return
	}
	req, e := s.route(r)
	if e != nil {
		writeError(w, e)
		return
	}
	var handler func(http.ResponseWriter, *http.Request, request)
	switch req.endpoint + " " + r.Method {
	case "values GET":
		handler = s.getValue
	case "values PUT":
		handler = s.putValue
	case "values DELETE":
		handler = s.deleteValue
	case "metadata GET":
		handler = s.getMetadata
	case "keys GET":
		handler = s.listKeys
	case "bulk PUT":
		handler = s.bulkPut
	case "bulk/delete POST", "bulk DELETE":
		handler = s.bulkDelete
	case "bulk/get POST":
		handler = s.bulkGet
	default:
		writeError(w, errorf(http.StatusMethodNotAllowed, CodeMethod, "method not allowed for this route"))
		return
	}
	handler(w, r, req)
}

func (s *Server) authorized(r *http.Request) bool {
	if len(s.token) == 0 {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), s.token) == 1
}

const apiRoot = "/client/v4/accounts/"

// route splits the escaped path, so that an encoded "/" inside a key stays
// inside the key, and decodes each part exactly once.
func (s *Server) route(r *http.Request) (request, *apiError) {
	noRoute := errorf(http.StatusNotFound, CodeNoRoute, "No route for that URI")
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), apiRoot)
	if !ok {
		return request{}, noRoute
	}
	account, rest, ok := strings.Cut(rest, "/")
	if !ok {
		return request{}, noRoute
	}
	rest, ok = strings.CutPrefix(rest, "storage/kv/namespaces/")
	if !ok {
		return request{}, noRoute
	}
	nsPart, endpoint, ok := strings.Cut(rest, "/")
	if !ok {
		return request{}, noRoute
	}
	if acc, err := url.PathUnescape(account); err != nil || (s.account != "" && acc != s.account) {
		return request{}, errorf(http.StatusNotFound, CodeBadAccount, "Could not route to the account, perhaps your object identifier is invalid?")
	}
	ns, err := url.PathUnescape(nsPart)
	if err != nil || !identifier.MatchString(ns) {
		return request{}, errorf(http.StatusBadRequest, CodeNamespaceID, "malformed namespace ID")
	}
	req := request{ns: ns, location: r.Header.Get(LocationHeader)}
	switch {
	case endpoint == "keys" || endpoint == "bulk" || endpoint == "bulk/delete" || endpoint == "bulk/get":
		req.endpoint = endpoint
	case strings.HasPrefix(endpoint, "values/"), strings.HasPrefix(endpoint, "metadata/"):
		var escaped string
		req.endpoint, escaped, _ = strings.Cut(endpoint, "/")
		key, err := url.PathUnescape(escaped)
		if err != nil {
			return request{}, errorf(http.StatusBadRequest, CodeIllegalKey, "illegal key name: could not URL-decode it")
		}
		if e := checkKey(key); e != nil {
			return request{}, e
		}
		req.key = key
	default:
		return request{}, noRoute
	}
	st, ok := s.namespaces[ns]
	if !ok {
		return request{}, errorf(http.StatusNotFound, CodeNoNamespace, "namespace not found")
	}
	req.store = st
	return req, nil
}

// checkKey applies the key rules with the API's codes; the store checks
// them again.
func checkKey(key string) *apiError {
	if len(key) > kv.MaxKeySize {
		return errorf(http.StatusRequestURITooLong, CodeKeyTooLong, "key too long: %d bytes, the limit is %d", len(key), kv.MaxKeySize)
	}
	if err := kv.ValidateKey(key); err != nil {
		return errorf(http.StatusBadRequest, CodeIllegalKey, "illegal key name")
	}
	return nil
}
