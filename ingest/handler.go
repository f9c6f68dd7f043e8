package ingest

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/membudget"
)

// Sink takes the copies of one batch, all checked, in the order sent. It
// returns an error matching ErrUnknownNamespace, ErrStage or
// kv.ErrUnavailable (with kv.RetryAfter) for the handler to say so; any
// other error is a 500. The handler does not retry: the tee's settling
// (every copied key is verified against the primary) covers what is lost.
type Sink interface {
	Ingest(ctx context.Context, namespace string, copies []Copy) error
}

// ReadSink is the optional ability of a Sink to take the tee's sampled
// reads, all checked, to compare them with the shadow. It returns how many
// it took for comparison; the rest (its stage compares none, or it had no
// room) are counted as ignored in the answer, as every read is when the
// Sink has no such ability. Its errors are a Sink's.
type ReadSink interface {
	CompareReads(ctx context.Context, namespace string, reads []Read) (compared int, err error)
}

// Authority is what the stage endpoint tells a tee.
type Authority struct {
	Stage string `json:"stage"`
	// ShadowAuthoritative is true in the stages where MongoDB is the
	// authoritative store: the tee then goes through the proxy.
	ShadowAuthoritative bool `json:"-"`
	// ThroughProxy is true in the stages where the tee sends every read
	// and write through the proxy instead of its binding (from handover
	// on): the answer's route.
	ThroughProxy bool `json:"-"`
	// Generation is the stage document's generation the answer comes
	// from, so that a tee can tell a newer answer from an older one.
	Generation uint64 `json:"generation"`
	// LeaseMS is how long, in milliseconds from when it asked, a tee may
	// route by the answer (it never trusts it longer than its own
	// stageTtlMs); 0 leaves the tee's own.
	LeaseMS   int64  `json:"lease_ms,omitempty"`
	Account   string `json:"account,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// ExcludePrefixes are the key prefixes the proxy leaves out of the
	// migration (its --exclude-prefix, and kv.ReservedPrefix): the tee
	// sends no copy or read of a key under one.
	ExcludePrefixes []string `json:"exclude_prefixes,omitempty"`
}

// StageReader answers the stage endpoint for a namespace ("" for the
// default one).
type StageReader interface {
	Authority(ctx context.Context, namespace string) (Authority, error)
}

// The defaults of the zero Config.
const (
	DefaultMaxBodyBytes = 64 << 20
	DefaultMaxCopies    = 1000 // a Worker invocation makes at most 1,000 KV operations
	DefaultMaxReads     = 1000
)

// Config configures a Handler; zero values mean the documented defaults.
type Config struct {
	// Token must come as "Authorization: Bearer <Token>"; required.
	Token string `json:"-"`
	// DefaultNamespace is used for a batch or stage request that names no
	// namespace; empty refuses them.
	DefaultNamespace string
	// Stage answers GET .../stage; nil answers 404 there.
	Stage StageReader `json:"-"`
	// MaxBodyBytes caps a request body: DefaultMaxBodyBytes when 0.
	MaxBodyBytes int64
	// MaxCopies and MaxReads cap a batch's items: DefaultMaxCopies and
	// DefaultMaxReads when 0.
	MaxCopies, MaxReads int
	// Clock checks times; nil is the system clock.
	Clock clock.Clock `json:"-"`
	// Memory is the budget a batch draws from as it is read (twice its
	// bytes: the body and the copies decoded from it), 503 past it. Nil
	// means a Handler's own of membudget.DefaultLimit; a process shares one.
	Memory *membudget.Budget `json:"-"`
}

func (c Config) withDefaults() Config {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxCopies <= 0 {
		c.MaxCopies = DefaultMaxCopies
	}
	if c.MaxReads <= 0 {
		c.MaxReads = DefaultMaxReads
	}
	c.Clock = clock.OrReal(c.Clock)
	if c.Memory == nil {
		c.Memory, _ = membudget.New(membudget.Config{}) // the default config is valid
	}
	return c
}

// Handler serves the ingest and stage endpoints under whatever path it is
// mounted at: a request path ending in /ingest or /stage.
type Handler struct {
	sink  Sink
	cfg   Config
	token []byte

	mu      sync.Mutex
	refused map[string]uint64 // by error code
}

var _ http.Handler = (*Handler)(nil)

// New returns a Handler that hands batches to sink.
func New(sink Sink, cfg Config) (*Handler, error) {
	if sink == nil {
		return nil, fmt.Errorf("%w: nil Sink", ErrConfig)
	}
	if cfg.Token == "" || strings.ContainsFunc(cfg.Token, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return nil, fmt.Errorf("%w: Token is required, without whitespace or control characters", ErrConfig)
	}
	if cfg.DefaultNamespace != "" && !kv.IsID(cfg.DefaultNamespace) {
		return nil, fmt.Errorf("%w: DefaultNamespace must match %s", ErrConfig, kv.IDForm)
	}
	cfg = cfg.withDefaults()
	return &Handler{sink: sink, cfg: cfg, token: []byte(cfg.Token), refused: map[string]uint64{}}, nil
}

// Result is the answer to an accepted batch: the copies handed on, the
// reads taken for comparison and those ignored.
type Result struct {
	Copies       int `json:"copies"`
	Reads        int `json:"reads"`
	ReadsIgnored int `json:"reads_ignored"`
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(r) {
		h.writeError(w, http.StatusUnauthorized, "unauthorized", "a valid bearer token is required", 0)
		return
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/ingest"):
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			h.writeError(w, http.StatusMethodNotAllowed, "method", "ingest takes POST", 0)
			return
		}
		h.ingest(w, r)
	case strings.HasSuffix(r.URL.Path, "/stage"):
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			h.writeError(w, http.StatusMethodNotAllowed, "method", "stage takes GET", 0)
			return
		}
		h.stage(w, r)
	default:
		h.writeError(w, http.StatusNotFound, "no_route", "no such endpoint: want .../ingest or .../stage", 0)
	}
}

func (h *Handler) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), h.token) == 1
}

func (h *Handler) ingest(w http.ResponseWriter, r *http.Request) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		h.writeError(w, http.StatusUnsupportedMediaType, "content_type", "the body must be application/json", 0)
		return
	}
	if r.ContentLength > h.cfg.MaxBodyBytes {
		h.writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the body is over %d bytes", h.cfg.MaxBodyBytes), 0)
		return
	}
	hold := h.cfg.Memory.Hold(r.Context())
	defer hold.Release()
	b, err := Decode(hold.Reader(r.Body, 2), h.cfg, h.cfg.Clock.Now())
	if err != nil {
		if hold.Err() != nil {
			err = hold.Err()
		}
		h.fail(w, err)
		return
	}
	ns := cmp.Or(b.Namespace, h.cfg.DefaultNamespace)
	if ns == "" {
		h.writeError(w, http.StatusBadRequest, "invalid_batch", "the batch names no namespace and the proxy has no default", 0)
		return
	}
	res := Result{Copies: len(b.Copies), Reads: len(b.Reads)}
	if len(b.Copies) > 0 {
		if err := h.sink.Ingest(r.Context(), ns, b.Copies); err != nil {
			h.fail(w, err)
			return
		}
	}
	if len(b.Reads) > 0 {
		res.Reads = 0
		if rs, ok := h.sink.(ReadSink); ok {
			n, err := rs.CompareReads(r.Context(), ns, b.Reads)
			if err != nil {
				h.fail(w, err)
				return
			}
			res.Reads = min(max(n, 0), len(b.Reads))
		}
		res.ReadsIgnored = len(b.Reads) - res.Reads
	}
	writeJSON(w, http.StatusOK, res)
}

func (h *Handler) stage(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Stage == nil {
		h.writeError(w, http.StatusNotFound, "no_route", "this proxy serves no stage to tees", 0)
		return
	}
	ns := r.URL.Query().Get("namespace")
	if ns != "" && !kv.IsID(ns) {
		h.writeError(w, http.StatusBadRequest, "invalid_namespace", "namespace must match "+kv.IDForm, 0)
		return
	}
	a, err := h.cfg.Stage.Authority(r.Context(), cmp.Or(ns, h.cfg.DefaultNamespace))
	if err != nil {
		h.fail(w, err)
		return
	}
	auth, route := "primary", "binding"
	if a.ShadowAuthoritative {
		auth = "shadow"
	}
	if a.ThroughProxy || a.ShadowAuthoritative {
		route = "proxy"
	}
	writeJSON(w, http.StatusOK, struct {
		Authority
		Authoritative string `json:"authoritative"`
		Route         string `json:"route"`
	}{a, auth, route})
}

// fail answers an error by its kind; the message of a Sink's own error is
// not forwarded, as it may name a key.
func (h *Handler) fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrTooLarge):
		h.writeError(w, http.StatusRequestEntityTooLarge, "too_large", err.Error(), 0)
	case errors.Is(err, ErrKeyEncoding):
		h.writeError(w, http.StatusBadRequest, "invalid_key", err.Error(), 0)
	case errors.Is(err, kv.ErrReservedKey):
		h.writeError(w, http.StatusBadRequest, "reserved_key", err.Error(), 0)
	case errors.Is(err, ErrInvalidBatch):
		h.writeError(w, http.StatusBadRequest, "invalid_batch", err.Error(), 0)
	case errors.Is(err, ErrUnknownNamespace):
		h.writeError(w, http.StatusNotFound, "unknown_namespace", "the proxy serves no such namespace", 0)
	case errors.Is(err, ErrStage):
		h.writeError(w, http.StatusConflict, "stage", "the stage takes no tee copies: read the stage again", 0)
	case errors.Is(err, membudget.ErrExhausted):
		h.writeError(w, http.StatusServiceUnavailable, "unavailable", "the proxy's memory budget is taken by the requests under way; retry shortly", membudget.RetryAfter.Seconds())
	case errors.Is(err, kv.ErrUnavailable):
		ra, _ := kv.RetryAfter(err)
		h.writeError(w, http.StatusServiceUnavailable, "unavailable", "the proxy cannot take copies now", ra.Seconds())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		h.writeError(w, http.StatusServiceUnavailable, "unavailable", "the request ended before the batch was taken", 0)
	default:
		h.writeError(w, http.StatusInternalServerError, "internal", "the batch could not be taken", 0)
	}
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeError answers an error, counting a refusal (a 4xx answer) by its
// code.
func (h *Handler) writeError(w http.ResponseWriter, status int, code, message string, retryAfter float64) {
	if status >= 400 && status < 500 {
		h.mu.Lock()
		h.refused[code]++
		h.mu.Unlock()
	}
	writeError(w, status, code, message, retryAfter)
}

// Refused returns how many requests the handler refused (answered 4xx),
// by error code: unauthorized, method, content_type, too_large,
// invalid_batch, invalid_key, reserved_key, unknown_namespace, stage, no_route,
// invalid_namespace.
func (h *Handler) Refused() map[string]uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.refused)
}

func writeError(w http.ResponseWriter, status int, code, message string, retryAfter float64) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retryAfter))))
	}
	var b errorBody
	b.Error.Code, b.Error.Message = code, message
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	raw, _ := json.Marshal(v) // only this package's own types
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
	w.WriteHeader(status)
	_, _ = w.Write(raw)
}
