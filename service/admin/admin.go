package admin

import (
	"bytes"
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kvapi"
)

// Stager is the instance's side of the stage document: a *control.Follower.
type Stager interface {
	Status() control.Status
	SetStage(ctx context.Context, to dualwrite.Stage) (control.Change, error)
	Instances(ctx context.Context) ([]control.InstanceView, error)
	Forget(ctx context.Context, instance string) error
	// FlipHold says what holds the flip between handover and live back
	// across the fleet; ok is false in the other stages.
	FlipHold(ctx context.Context) (hold control.Hold, ok bool, err error)
}

// Store is one namespace's dual-write store: a *dualwrite.Store.
type Store interface {
	Stats() dualwrite.Stats
	DirtyKeys() []string
	UnsettledKeys() []string
	RepairDirty() int
	AllowDeletes() int
}

// Namespace is one served namespace.
type Namespace struct {
	ID    string
	Store Store
}

// Config configures the Handler.
type Config struct {
	// Token, when set, is required on every route but the probes.
	Token      string
	Stager     Stager
	Namespaces []Namespace
	// Redactor renders keys for GET /dirty unless plain keys are asked
	// for; nil means an HMAC with a random secret.
	Redactor *compare.Redactor
	// Ready returns the reasons the instance should get no traffic; none
	// means ready.
	Ready func(ctx context.Context) []Reason
	// Metrics serves GET /metrics; nil answers 404.
	Metrics http.Handler
	// Operations counts the requests the front answered, for GET /stats.
	Operations func() Operations
	// Reconciler serves POST /reconciliation; nil answers 404.
	Reconciler Reconciler
	// TeeRefused counts the batches the tee endpoint refused whole, by
	// error code, for total.ingest_refused of GET /stats.
	TeeRefused func() map[string]uint64
}

// Reason is one reason an instance is not ready. /readyz needs no token
// (probes send none), so without the admin token it answers only General:
// what kind of reason, in words that name no namespace, store or key.
type Reason struct {
	General string // such as "draining" or "an authoritative store does not answer"
	Detail  string // the whole story, for whoever holds the admin token
	// Degraded marks what is said without taking the traffic away (a
	// store that is only copied to does not answer): /readyz stays 200
	// and lists it under "degraded".
	Degraded bool
}

// MaxBody bounds a request body: the API reads only small ones.
const MaxBody = 4 << 10

// DefaultDirtyLimit is how many keys GET /dirty lists without ?limit=.
const DefaultDirtyLimit = 1000

// Handler serves the admin API.
type Handler struct {
	cfg Config
	mux *http.ServeMux
}

// New returns the Handler for cfg.
func New(cfg Config) (*Handler, error) {
	if cfg.Stager == nil || len(cfg.Namespaces) == 0 || cfg.Ready == nil {
		return nil, errors.New("admin: Stager, Ready and at least one Namespace are required")
	}
	if cfg.Redactor == nil {
		r, err := compare.NewRedactor(compare.KeyHMAC, nil)
		if err != nil {
			return nil, err
		}
		cfg.Redactor = r
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	h.mux.HandleFunc("GET /readyz", h.readyz)
	h.mux.HandleFunc("GET /stage", h.auth(h.getStage))
	h.mux.HandleFunc("PUT /stage", h.auth(changes(h.putStage)))
	h.mux.HandleFunc("GET /stats", h.auth(h.stats))
	h.mux.HandleFunc("GET /dirty", h.auth(h.keys(Store.DirtyKeys)))
	h.mux.HandleFunc("GET /unsettled", h.auth(h.keys(Store.UnsettledKeys)))
	h.mux.HandleFunc("POST /repair", h.auth(changes(h.repair)))
	h.mux.HandleFunc("DELETE /instances/{id}", h.auth(changes(h.forget)))
	h.mux.HandleFunc("POST /reconciliation", h.auth(changes(h.clearReconciliation)))
	if cfg.Metrics != nil {
		h.mux.Handle("GET /metrics", h.auth(cfg.Metrics.ServeHTTP))
	}
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route %s %s; see GET /stage, PUT /stage, GET /stats, GET /dirty, GET /unsettled, POST /repair, POST /reconciliation, GET /metrics, GET /healthz, GET /readyz", r.Method, r.URL.Path))
	})
	return h, nil
}

// ServeHTTP implements http.Handler. Without a token it serves only what
// kvapi.CheckLocal passes (no web page of another origin, no DNS-rebinding
// host name), the probes excepted.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Token == "" && r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
		if err := kvapi.CheckLocal(r); err != nil {
			writeError(w, http.StatusForbidden, "this admin API serves without a token, so it takes no request from another origin or for another host name")
			return
		}
	}
	h.mux.ServeHTTP(w, r)
}

// changes guards a route that changes state: it takes only a body declared
// application/json, a type no web page can send to another origin without
// the browser asking first (CORS preflight), which this API never grants.
func changes(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			writeError(w, http.StatusUnsupportedMediaType, "a route that changes state takes Content-Type: application/json (with an empty body where it needs none)")
			return
		}
		next(w, r)
	}
}

func (h *Handler) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !h.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="kvshadow-admin"`)
			writeError(w, http.StatusUnauthorized, "the admin API needs Authorization: Bearer <admin token>")
			return
		}
		next(w, r)
	}
}

// authorized reports whether r carries the admin token, or none is needed.
func (h *Handler) authorized(r *http.Request) bool {
	if h.cfg.Token == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(h.cfg.Token)) == 1
}

// readyz answers the probes (see Reason).
func (h *Handler) readyz(w http.ResponseWriter, r *http.Request) {
	reasons := h.cfg.Ready(r.Context())
	detailed := h.authorized(r)
	out, degraded := []string{}, []string{}
	for _, why := range reasons {
		text := why.General
		if detailed && why.Detail != "" {
			text = why.Detail
		}
		list := &out
		if why.Degraded {
			list = &degraded
		}
		if !slices.Contains(*list, text) {
			*list = append(*list, text)
		}
	}
	answer, status := map[string]any{"ready": len(out) == 0}, http.StatusOK
	if len(out) > 0 {
		answer["reasons"], status = out, http.StatusServiceUnavailable
	}
	if len(degraded) > 0 {
		answer["degraded"] = degraded
	}
	writeJSON(w, status, answer)
}

func (h *Handler) getStage(w http.ResponseWriter, r *http.Request) {
	views, err := h.cfg.Stager.Instances(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	out := StageView{Self: statusOf(h.cfg.Stager.Status())}
	for _, v := range views {
		out.Instances = append(out.Instances, instanceOf(v))
	}
	out.StageKey = map[string]dualwrite.StageKeyStatus{}
	for _, ns := range h.cfg.Namespaces {
		if k := ns.Store.Stats().StageKey; k.Found != "" {
			out.StageKey[ns.ID] = k
		}
	}
	hold, ok, err := h.cfg.Stager.FlipHold(r.Context())
	switch {
	case err != nil:
		out.Flip = &FlipView{HeldBy: []string{err.Error()}}
	case ok:
		out.Flip = &FlipView{From: hold.From.String(), To: hold.To.String(), Clear: len(hold.HeldBy) == 0,
			RemainingSeconds: seconds(hold.Remaining), HeldBy: hold.HeldBy}
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) putStage(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Stage               string `json:"stage"`
		ConfirmIrreversible bool   `json:"confirm_irreversible"`
	}
	if err := decodeStrict(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	to, err := dualwrite.ParseStage(req.Stage)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown stage %q: want one of %s", req.Stage, dualwrite.StageNames()))
		return
	}
	if to == dualwrite.Complete && !req.ConfirmIrreversible && h.cfg.Stager.Status().Document.Stage != dualwrite.Complete {
		writeError(w, http.StatusBadRequest, completeUnconfirmed)
		return
	}
	c, err := h.cfg.Stager.SetStage(r.Context(), to)
	switch {
	case errors.Is(err, dualwrite.ErrStageTransition), errors.Is(err, control.ErrNotDrained), errors.Is(err, control.ErrConflict), errors.Is(err, dualwrite.ErrUnsynced):
		writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error(), "stage": c.Document.Stage.String(), "generation": c.Document.Generation})
		return
	case errors.Is(err, dualwrite.ErrInvalidConfig):
		writeError(w, http.StatusBadRequest, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	status := http.StatusOK
	if !c.Applied {
		status = http.StatusAccepted // the document changed; this instance follows when it can
	}
	writeJSON(w, status, ChangeView{Stage: c.Document.Stage.String(), Generation: c.Document.Generation, Changed: c.Changed, Applied: c.Applied, Lag: c.Lag})
}

// completeUnconfirmed is the refusal of a move to complete without its
// confirmation: the one move that cannot be undone is never one slip.
const completeUnconfirmed = `complete is irreversible: Workers KV is no longer written from then on and no stage leads back ` +
	`(the way back through rampdown, live and handover closes for good); confirm with ` +
	`{"stage": "complete", "confirm_irreversible": true}`

// limitOf reads ?limit=, a count of what, def when absent.
func limitOf(w http.ResponseWriter, r *http.Request, def int, what string) (int, bool) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("limit=%q: want a number of %s, 0 or more", v, what))
		return 0, false
	}
	return n, true
}

func (h *Handler) stats(w http.ResponseWriter, _ *http.Request) {
	st := h.cfg.Stager.Status()
	out := StatsView{Instance: st.Instance, Generation: st.Generation, Namespaces: map[string]StoreStats{}}
	var all []dualwrite.Stats
	for _, ns := range h.cfg.Namespaces {
		s := ns.Store.Stats()
		all = append(all, s)
		out.Namespaces[ns.ID] = statsOf(s)
		if h.cfg.Reconciler != nil {
			if out.Reconciliation == nil {
				out.Reconciliation = map[string]ReconciliationView{}
			}
			out.Reconciliation[ns.ID] = h.cfg.Reconciler.Reconciliation(ns.ID)
		}
	}
	total := Sum(all...)
	if h.cfg.TeeRefused != nil {
		for code, n := range h.cfg.TeeRefused() {
			total.IngestRefused[dualwrite.IngestRefusal(code)] += n
		}
	}
	out.Total = statsOf(total)
	var ops Operations
	if h.cfg.Operations != nil {
		ops = h.cfg.Operations()
	}
	out.Summary = summaryOf(st, total, ops)
	writeJSON(w, http.StatusOK, out)
}

// keys lists the keys of one state of the settle set.
func (h *Handler) keys(list func(Store) []string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		form := cmp.Or(compare.KeyPolicy(r.URL.Query().Get("keys")), compare.KeyHMAC)
		if form != compare.KeyHMAC && form != compare.KeyPlain {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("keys=%q: want hmac (the default) or plain", form))
			return
		}
		limit, ok := limitOf(w, r, DefaultDirtyLimit, "keys")
		if !ok {
			return
		}
		out := DirtyView{Keys: string(form), Namespaces: map[string]DirtyList{}}
		for _, ns := range h.cfg.Namespaces {
			keys := list(ns.Store)
			l := DirtyList{Count: len(keys), Keys: []string{}}
			for _, k := range keys[:min(limit, len(keys))] {
				if form != compare.KeyPlain {
					k = h.cfg.Redactor.Key(k)
				}
				l.Keys = append(l.Keys, k)
			}
			l.Truncated = len(keys) > limit
			out.Namespaces[ns.ID] = l
		}
		writeJSON(w, http.StatusOK, out)
	}
}

func (h *Handler) repair(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AllowDeletes bool `json:"allow_deletes"`
	}
	if r.ContentLength != 0 {
		if err := decodeStrict(r, &req); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	out, allowed, held := map[string]int{}, map[string]int{}, map[string]int{}
	for _, ns := range h.cfg.Namespaces {
		if req.AllowDeletes {
			allowed[ns.ID] = ns.Store.AllowDeletes()
		}
		out[ns.ID], held[ns.ID] = ns.Store.RepairDirty(), ns.Store.Stats().DeletesHeld
	}
	writeJSON(w, http.StatusOK, map[string]any{"queued": out, "deletes_allowed": allowed, "deletes_held": held})
}

func (h *Handler) forget(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == h.cfg.Stager.Status().Instance {
		writeError(w, http.StatusConflict, fmt.Sprintf("instance %q is this one; it forgets itself when it stops clean", id))
		return
	}
	if err := h.cfg.Stager.Forget(r.Context(), id); err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// decodeStrict reads one JSON object of known fields and nothing after it.
// A field must be named exactly as documented, once: encoding/json would
// take "STAGE" for "stage", and the last of two "stage"s, so that what an
// operator (or a proxy between) sent twice or misspelt is refused rather
// than guessed.
func decodeStrict(r *http.Request, dst any) error {
	if r.ContentLength > MaxBody {
		return fmt.Errorf("the body is %d bytes; the limit is %d", r.ContentLength, MaxBody)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return fmt.Errorf("reading the body: %v", err)
	}
	if len(body) > MaxBody {
		return fmt.Errorf("the body is more than %d bytes; the limit is %d", MaxBody, MaxBody)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf(`the body must be one JSON object such as {"stage": "shadow"}: %v`, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("the body holds data after its JSON object")
	}
	return fieldsOnce(body, jsonFields(dst))
}

// fieldsOnce checks that the JSON object in body names each of its fields
// once, each exactly one of known.
func fieldsOnce(body []byte, known []string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // the object's '{', as Decode found
		return err
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := t.(string)
		switch {
		case seen[name]:
			return fmt.Errorf("the field %q is given twice", name)
		case !slices.Contains(known, name):
			return fmt.Errorf("unknown field %q (field names are lower case, as documented: %s)", name, strings.Join(known, ", "))
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
}

// jsonFields lists the JSON names of the fields of the struct dst points to.
func jsonFields(dst any) []string {
	t := reflect.TypeOf(dst)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	if t.Kind() != reflect.Struct {
		return out
	}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		out = append(out, cmp.Or(name, f.Name))
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "<" is read by people: never \u003c
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// seconds renders a duration for JSON, to the millisecond: a whole number
// of milliseconds divided once, so that 31.702 s is written 31.702 and not
// 31.701999999999998 (Duration.Seconds adds two inexact parts).
func seconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)/time.Millisecond) / 1000
}
