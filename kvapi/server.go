package kvapi

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/membudget"
)

// LocationHeader names the edge location a request is served by; see the
// package documentation on the consistency window.
const LocationHeader = "X-Kvapi-Location"

// AnyAccount is the account ID that /memberships reports for a server that
// serves any account (Config.AccountID empty).
const AnyAccount = "any-account"

// Config configures a Server.
type Config struct {
	// Namespaces maps each namespace ID the server serves to its store. It
	// must hold at least one, unless NewStore is set.
	Namespaces map[string]kv.Store
	// NewStore, when set, makes the server own its namespaces, as the
	// emulator does: the API may create namespaces (each a store NewStore
	// returns), rename and delete them. Without it the namespaces are fixed
	// and those calls are refused with 405 and FixedNamespaces' message.
	NewStore func() kv.Store
	// FixedNamespaces is what a client that asks to create, rename or delete
	// a namespace of a server without NewStore is told: where the set of
	// namespaces is changed. Empty says that the set is fixed and names it.
	FixedNamespaces string
	// AccountID is the account the server answers for; empty accepts any.
	AccountID string
	// Token, when set, must come as "Authorization: Bearer <Token>" on every
	// request; empty turns the check off (see ServeConfig.Unauthenticated).
	// It must pass CheckToken.
	Token string
	// WrongToken, when set, is what a client whose token is not Token is
	// told, answered 401 with code CodeAuthentication: a proxy's own reason,
	// which Cloudflare's 403 "Authentication error" would hide. Empty
	// answers as Cloudflare does.
	WrongToken string
	// Clock checks expirations and paces the faults; nil is the system
	// clock. Share it with the stores' clock so both agree on "now".
	Clock clock.Clock
	// Faults are the fault switches; nil means a set of its own, all off.
	// Server.Faults returns them either way.
	Faults *Faults
	// Memory is the budget every request draws from (its body twice over,
	// for what is decoded from it, and the values it answers). Nil means a
	// budget of the Server's own of membudget.DefaultLimit; a process shares one.
	Memory *membudget.Budget
	// RefuseReserved makes the server a front for clients (kvshadow-proxy's):
	// keys and list prefixes under kv.ReservedPrefix are refused (see the
	// package doc). Unset, the server stands in for Workers KV (the emulator)
	// and serves them: kvshadow-proxy writes its stage key through it.
	RefuseReserved bool
}

// ErrConfig reports a Config that New refuses.
var ErrConfig = errors.New("kvapi: invalid config")

type namespace struct {
	id, title string
	store     kv.Store
}

// Server is the Workers KV REST API handler. It is safe for concurrent use.
type Server struct {
	account  string
	token    []byte
	refusal  string // Config.WrongToken
	newStore func() kv.Store
	fixed    string // FixedNamespaces, resolved
	clock    clock.Clock
	faults   *Faults
	memory   *membudget.Budget
	reserved bool // Config.RefuseReserved
	requests atomic.Int64

	mu         sync.RWMutex
	namespaces map[string]*namespace

	limiter   writeLimiter
	locations locations
}

var _ http.Handler = (*Server)(nil)

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if len(cfg.Namespaces) == 0 && cfg.NewStore == nil {
		return nil, fmt.Errorf("%w: no namespaces", ErrConfig)
	}
	namespaces := make(map[string]*namespace, len(cfg.Namespaces))
	for id, st := range cfg.Namespaces {
		if !kv.IsID(id) {
			return nil, fmt.Errorf("%w: namespace ID %q must match %s", ErrConfig, id, kv.IDForm)
		}
		if st == nil {
			return nil, fmt.Errorf("%w: namespace %q has a nil store", ErrConfig, id)
		}
		namespaces[id] = &namespace{id: id, title: id, store: st}
	}
	if cfg.Token != "" {
		if err := CheckToken(cfg.Token); err != nil {
			return nil, err
		}
	}
	if cfg.AccountID != "" && !kv.IsID(cfg.AccountID) {
		return nil, fmt.Errorf("%w: account ID %q must match %s", ErrConfig, cfg.AccountID, kv.IDForm)
	}
	f := cmp.Or(cfg.Faults, &Faults{})
	mem := cfg.Memory
	if mem == nil {
		var err error
		if mem, err = membudget.New(membudget.Config{}); err != nil {
			return nil, err
		}
	}
	return &Server{
		account:    cfg.AccountID,
		token:      []byte(cfg.Token),
		refusal:    cfg.WrongToken,
		newStore:   cfg.NewStore,
		fixed:      fixedMessage(cfg),
		clock:      clock.OrReal(cfg.Clock),
		faults:     f,
		memory:     mem,
		reserved:   cfg.RefuseReserved,
		namespaces: namespaces,
	}, nil
}

// Faults returns the server's fault switches.
func (s *Server) Faults() *Faults { return s.faults }

// Requests returns how many API requests the server has received, failed
// ones included: the unit in which Workers KV bills and rate-limits. What an
// HTTPServer refuses before the Server (past its concurrency bound, or
// unparsable) is not counted.
func (s *Server) Requests() int64 { return s.requests.Load() }

// RequiresToken reports whether the server checks a client token.
func (s *Server) RequiresToken() bool { return len(s.token) > 0 }

// String names the server without its token.
func (s *Server) String() string {
	s.mu.RLock()
	n := len(s.namespaces)
	s.mu.RUnlock()
	return fmt.Sprintf("kvapi.Server{account: %q, namespaces: %d, auth: %t}", s.account, n, s.RequiresToken())
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if !s.faults.delay(r.Context(), s.clock) {
		writeError(w, storeError(r.Context().Err()))
		return
	}
	if e, ok := s.faults.injected(); ok {
		writeError(w, e)
		return
	}
	if e := s.authorize(r); e != nil {
		writeError(w, e)
		return
	}
	req, e := s.route(r)
	if e != nil {
		writeError(w, e)
		return
	}
	h, e := s.handler(w, req.endpoint, r.Method)
	if e != nil {
		writeError(w, e)
		return
	}
	if e := limitBody(w, r, bodyLimit(req.endpoint, r)); e != nil {
		writeError(w, e)
		return
	}
	// Charged after the token is checked: bytes declared by someone without
	// it hold nothing. The Hold is reused: released when the handler
	// returns, it is read by nothing after (the body it charges is put
	// back first).
	req.hold = holds.Get().(*membudget.Hold)
	req.hold.Reset(s.memory, r.Context())
	defer func(h *membudget.Hold) {
		h.Release()
		h.Reset(nil, nil)
		holds.Put(h)
	}(req.hold)
	if r.Body != nil && r.Body != http.NoBody {
		defer restoreBody(r)()
		r.Body = req.hold.Body(r.Body, bodyFactor)
	}
	h(s, w, r, req)
}

var holds = sync.Pool{New: func() any { return new(membudget.Hold) }}

func fixedMessage(cfg Config) string {
	if cfg.FixedNamespaces != "" {
		return cfg.FixedNamespaces
	}
	ids := slices.Sorted(maps.Keys(cfg.Namespaces))
	return "This server serves a fixed set of namespaces (" + strings.Join(ids, ", ") + "); it does not create, rename or delete them."
}
