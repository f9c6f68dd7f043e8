package kvapi

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/membudget"
)

// endpoint is one route of the API, whatever its method.
type endpoint int

const (
	epVerify      endpoint = iota // user/tokens/verify
	epMemberships                 // memberships
	epAccounts                    // accounts
	epUser                        // user
	epNamespaces                  // accounts/{a}/storage/kv/namespaces
	epNamespace                   // .../namespaces/{ns}
	epValues                      // .../{ns}/values/{key}
	epMetadata                    // .../{ns}/metadata/{key}
	epKeys                        // .../{ns}/keys
	epBulk                        // .../{ns}/bulk
	epBulkDelete                  // .../{ns}/bulk/delete
	epBulkGet                     // .../{ns}/bulk/get
)

type handlerFunc func(*Server, http.ResponseWriter, *http.Request, request)

// routes holds what each endpoint serves; HEAD is served as GET (handler).
var routes = map[endpoint]map[string]handlerFunc{
	epVerify:      {"GET": (*Server).verifyToken},
	epMemberships: {"GET": (*Server).memberships},
	epAccounts:    {"GET": (*Server).accounts},
	epUser:        {"GET": (*Server).user},
	epNamespaces:  {"GET": (*Server).listNamespaces, "POST": (*Server).createNamespace},
	epNamespace:   {"GET": (*Server).getNamespace, "PUT": (*Server).renameNamespace, "DELETE": (*Server).deleteNamespace},
	epValues:      {"GET": (*Server).getValue, "PUT": (*Server).putValue, "DELETE": (*Server).deleteValue},
	epMetadata:    {"GET": (*Server).getMetadata},
	epKeys:        {"GET": (*Server).listKeys},
	epBulk:        {"PUT": (*Server).bulkPut, "DELETE": (*Server).bulkDelete},
	epBulkDelete:  {"POST": (*Server).bulkDelete},
	epBulkGet:     {"POST": (*Server).bulkGet},
}

// owning are the calls served only by a server that owns its namespaces.
var owning = map[endpoint][]string{epNamespaces: {"POST"}, epNamespace: {"PUT", "DELETE"}}

type request struct {
	endpoint endpoint
	ns       *namespace // nil for the account-level endpoints
	key      string     // for values and metadata
	location string
	hold     *membudget.Hold // what the request holds of the memory budget
}

// handler returns what serves method on ep, or the 405 with Allow set.
func (s *Server) handler(w http.ResponseWriter, ep endpoint, method string) (handlerFunc, *apiError) {
	if method == http.MethodHead {
		method = http.MethodGet
	}
	if h, ok := routes[ep][method]; ok && !s.owned(ep, method) {
		return h, nil
	}
	var allow []string
	for m := range routes[ep] {
		if s.owned(ep, m) {
			continue
		}
		allow = append(allow, m)
		if m == http.MethodGet {
			allow = append(allow, http.MethodHead)
		}
	}
	slices.Sort(allow)
	w.Header().Set("Allow", strings.Join(allow, ", "))
	if s.owned(ep, method) { // a namespace's management, on fixed namespaces
		return nil, errorf(http.StatusMethodNotAllowed, CodeMethod, "%s", s.fixed)
	}
	return nil, errorf(http.StatusMethodNotAllowed, CodeMethod, "method not allowed for this route")
}

// owned reports whether method on ep is one of the owning calls on a server
// that does not own its namespaces.
func (s *Server) owned(ep endpoint, method string) bool {
	return s.newStore == nil && slices.Contains(owning[ep], method)
}

const apiRoot = "/client/v4/"

// route splits the escaped path, so that an encoded "/" inside a key stays
// inside the key, and decodes each part exactly once.
func (s *Server) route(r *http.Request) (request, *apiError) {
	noRoute := func() *apiError { return errorf(http.StatusNotFound, CodeNoRoute, "No route for that URI") } // made only when answered
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), apiRoot)
	if !ok {
		return request{}, noRoute()
	}
	switch rest {
	case "user/tokens/verify":
		return request{endpoint: epVerify}, nil
	case "memberships":
		return request{endpoint: epMemberships}, nil
	case "accounts":
		return request{endpoint: epAccounts}, nil
	case "user":
		return request{endpoint: epUser}, nil
	}
	rest, ok = strings.CutPrefix(rest, "accounts/")
	if !ok {
		return request{}, noRoute()
	}
	account, rest, ok := strings.Cut(rest, "/")
	if !ok {
		return request{}, noRoute()
	}
	rest, ok = strings.CutPrefix(rest, "storage/kv/namespaces")
	if !ok || (rest != "" && rest[0] != '/') {
		return request{}, noRoute()
	}
	if acc, err := url.PathUnescape(account); err != nil || (s.account != "" && acc != s.account) {
		return request{}, errorf(http.StatusNotFound, CodeBadAccount, "Could not route to the account, perhaps your object identifier is invalid?")
	}
	if rest == "" {
		return request{endpoint: epNamespaces}, nil
	}
	nsPart, sub, hasSub := strings.Cut(rest[1:], "/")
	id, err := url.PathUnescape(nsPart)
	if err != nil || !kv.IsID(id) {
		return request{}, errorf(http.StatusBadRequest, CodeNamespaceID, "malformed namespace ID")
	}
	req := request{location: r.Header.Get(LocationHeader)}
	switch {
	case !hasSub:
		req.endpoint = epNamespace
	case sub == "keys":
		req.endpoint = epKeys
	case sub == "bulk":
		req.endpoint = epBulk
	case sub == "bulk/delete":
		req.endpoint = epBulkDelete
	case sub == "bulk/get":
		req.endpoint = epBulkGet
	case strings.HasPrefix(sub, "values/"), strings.HasPrefix(sub, "metadata/"):
		kind, escaped, _ := strings.Cut(sub, "/")
		req.endpoint = epValues
		if kind == "metadata" {
			req.endpoint = epMetadata
		}
		key, err := url.PathUnescape(escaped)
		if err != nil {
			return request{}, errorf(http.StatusBadRequest, CodeIllegalKey, "illegal key name: could not URL-decode it")
		}
		if e := s.checkKey(key); e != nil {
			return request{}, e
		}
		req.key = key
	default:
		return request{}, noRoute()
	}
	if req.ns = s.lookup(id); req.ns == nil {
		return request{}, errorf(http.StatusNotFound, CodeNoNamespace, "namespace not found")
	}
	return req, nil
}

// checkKey applies the key rules with the API's codes; the store checks
// them again. Every route's keys pass here, decoded as the store gets them.
func (s *Server) checkKey(key string) *apiError {
	if e := s.refuseReserved(key); e != nil {
		return e
	}
	if len(key) > kv.MaxKeySize {
		return keyTooLong(len(key))
	}
	if err := kv.ValidateKey(key); err != nil {
		switch key {
		case "":
			return errorf(http.StatusBadRequest, CodeIllegalKey, "Key names must not be empty")
		case ".", "..":
			return errorf(http.StatusBadRequest, CodeIllegalKey, "Illegal key name %q. Please use a different name.", key)
		}
		return errorf(http.StatusBadRequest, CodeIllegalKey, "Illegal key name. Please use a different name.")
	}
	return nil
}

// refuseReserved refuses, on a front for clients (Config.RefuseReserved), a
// key or list prefix under kv.ReservedPrefix: kvshadow's own keys, among them
// the stage key that isolates cut off from the proxy trust.
func (s *Server) refuseReserved(key string) *apiError {
	if !s.reserved || !strings.HasPrefix(key, kv.ReservedPrefix) {
		return nil
	}
	return errorf(http.StatusBadRequest, CodeIllegalKey, "Illegal key name: keys under %q are kvshadow's own; a client may not read, write, delete or list them.", kv.ReservedPrefix)
}

// keyTooLong is Workers KV's answer to a key or prefix over 512 bytes.
func keyTooLong(n int) *apiError {
	return errorf(http.StatusRequestURITooLong, CodeKeyTooLong, "UTF-8 encoded length of %d exceeds key length limit of %d.", n, kv.MaxKeySize)
}
