package kvapi

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"slices"
	"strconv"
)

// The account-level endpoints that wrangler and the SDKs call before they
// touch a namespace: the token check, the account list and the namespaces.

// tokenID is the ID /user/tokens/verify reports: the server knows one token
// and says nothing about it.
const tokenID = "00000000000000000000000000000000"

const maxTitle = 512

// MaxNamespaces is the most namespaces a server that owns them holds:
// Workers KV's limit per account.
const MaxNamespaces = 1000

type namespaceInfo struct {
	ID                  string `json:"id"`
	Title               string `json:"title"`
	SupportsURLEncoding bool   `json:"supports_url_encoding"`
}

func (n *namespace) info() namespaceInfo {
	return namespaceInfo{ID: n.id, Title: n.title, SupportsURLEncoding: true}
}

func (s *Server) lookup(id string) *namespace {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.namespaces[id]
}

func (s *Server) verifyToken(w http.ResponseWriter, _ *http.Request, _ request) {
	writeResult(w, map[string]string{"id": tokenID, "status": "active"}, nil)
}

// memberships lists the one account the server answers for; wrangler
// calls it, with accounts, to find the account when none is configured.
func (s *Server) memberships(w http.ResponseWriter, _ *http.Request, _ request) {
	id := cmp.Or(s.account, AnyAccount)
	m := map[string]any{
		"id":      id,
		"status":  "accepted",
		"account": map[string]string{"id": id, "name": id},
		"roles":   []string{"Administrator"},
	}
	writeResult(w, []any{m}, onePage)
}

func (s *Server) accounts(w http.ResponseWriter, _ *http.Request, _ request) {
	id := cmp.Or(s.account, AnyAccount)
	writeResult(w, []any{map[string]string{"id": id, "name": id, "type": "standard"}}, onePage)
}

var onePage = pageInfo{Page: 1, PerPage: 20, Count: 1, TotalCount: 1, TotalPages: 1}

// user answers as Cloudflare does for a token that may not read user
// details: the server knows no user. wrangler whoami then goes on without
// an e-mail address.
func (s *Server) user(w http.ResponseWriter, _ *http.Request, _ request) {
	writeError(w, errorf(http.StatusForbidden, CodeNoUserAccess, "Unauthorized to access requested resource"))
}

// listNamespaces serves page and per_page (1..1000, default 20), order (id
// or title) and direction (asc or desc).
func (s *Server) listNamespaces(w http.ResponseWriter, r *http.Request, _ request) {
	q := r.URL.Query()
	page, ok1 := intParam(q.Get("page"), 1, 1, 1<<30)
	perPage, ok2 := intParam(q.Get("per_page"), 20, 1, 1000)
	order, direction := cmp.Or(q.Get("order"), "id"), cmp.Or(q.Get("direction"), "asc")
	if !ok1 || !ok2 || (order != "id" && order != "title") || (direction != "asc" && direction != "desc") {
		writeError(w, errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: page, per_page (1..1000), order (id, title) or direction (asc, desc)"))
		return
	}
	s.mu.RLock()
	all := make([]namespaceInfo, 0, len(s.namespaces))
	for _, n := range s.namespaces {
		all = append(all, n.info())
	}
	s.mu.RUnlock()
	slices.SortFunc(all, func(a, b namespaceInfo) int {
		c := cmp.Compare(a.ID, b.ID)
		if order == "title" {
			c = cmp.Or(cmp.Compare(a.Title, b.Title), c)
		}
		if direction == "desc" {
			c = -c
		}
		return c
	})
	from := min((page-1)*perPage, len(all))
	items := all[from:min(from+perPage, len(all))]
	writeResult(w, items, pageInfo{Page: page, PerPage: perPage, Count: len(items), TotalCount: len(all), TotalPages: (len(all) + perPage - 1) / perPage})
}

func intParam(raw string, def, lo, hi int) (int, bool) {
	if raw == "" {
		return def, true
	}
	n, err := strconv.Atoi(raw)
	return n, err == nil && n >= lo && n <= hi
}

func (s *Server) getNamespace(w http.ResponseWriter, _ *http.Request, req request) {
	writeResult(w, req.ns.info(), nil)
}

type titleBody struct {
	Title *string `json:"title"`
}

func readTitle(r *http.Request) (string, *apiError) {
	var body titleBody
	if e := decodeObject(r, &body); e != nil {
		return "", e
	}
	switch {
	case body.Title == nil || *body.Title == "":
		return "", errorf(http.StatusBadRequest, CodeMissingTitle, "missing title")
	case len(*body.Title) > maxTitle:
		return "", errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: a title holds at most %d bytes", maxTitle)
	}
	return *body.Title, nil
}

// titleTaken reports whether another namespace has title; s.mu must be held.
func (s *Server) titleTaken(title, except string) bool {
	for id, n := range s.namespaces {
		if id != except && n.title == title {
			return true
		}
	}
	return false
}

func titleExists() *apiError {
	return errorf(http.StatusBadRequest, CodeNamespaceTitle, "a namespace with this account ID and title already exists")
}

func (s *Server) createNamespace(w http.ResponseWriter, r *http.Request, _ request) {
	title, e := readTitle(r)
	if e != nil {
		writeError(w, e)
		return
	}
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	id := hex.EncodeToString(raw[:])
	store := s.newStore()
	s.mu.Lock()
	taken, full := s.titleTaken(title, ""), len(s.namespaces) >= MaxNamespaces
	n := &namespace{id: id, title: title, store: store}
	if !taken && !full {
		s.namespaces[id] = n
	}
	s.mu.Unlock()
	switch {
	case taken:
		writeError(w, titleExists())
	case full:
		writeError(w, errorf(http.StatusBadRequest, CodeTooManyNamespaces, "too many namespaces in this account: the limit is %d", MaxNamespaces))
	default:
		writeResult(w, n.info(), nil)
	}
}

func (s *Server) renameNamespace(w http.ResponseWriter, r *http.Request, req request) {
	title, e := readTitle(r)
	if e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	cur, ok := s.namespaces[req.ns.id]
	taken := s.titleTaken(title, req.ns.id)
	var n *namespace
	if ok && !taken {
		n = &namespace{id: cur.id, title: title, store: cur.store}
		s.namespaces[n.id] = n
	}
	s.mu.Unlock()
	switch {
	case !ok:
		writeError(w, errorf(http.StatusNotFound, CodeNoNamespace, "namespace not found"))
	case taken:
		writeError(w, titleExists())
	default:
		writeResult(w, n.info(), nil)
	}
}

func (s *Server) deleteNamespace(w http.ResponseWriter, _ *http.Request, req request) {
	s.mu.Lock()
	delete(s.namespaces, req.ns.id)
	s.mu.Unlock()
	writeResult(w, nil, nil)
}
