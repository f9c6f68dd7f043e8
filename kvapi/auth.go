package kvapi

import (
	"crypto/subtle"
	"net/http"
	"regexp"
)

// bearer is the form of a well-formed Authorization header: a bearer token
// of RFC 6750's characters. Cloudflare's tokens are 40 of [A-Za-z0-9_-].
var bearer = regexp.MustCompile(`^Bearer ([A-Za-z0-9._~+/-]+=*)$`)

// authorize checks the client's credentials as Cloudflare does: no
// Authorization header (nor the legacy X-Auth-Key) is 400 with code
// CodeMissingAuth; a header that is not a bearer token is 400 with
// CodeInvalidHeaders and the error chain CodeBadAuthFormat; a token that is
// not the server's is 403 with CodeAuthentication.
func (s *Server) authorize(r *http.Request) *apiError {
	if !s.RequiresToken() {
		return nil
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		if r.Header.Get("X-Auth-Key") != "" {
			return errorf(http.StatusForbidden, CodeAuthentication, "Authentication error")
		}
		return errorf(http.StatusBadRequest, CodeMissingAuth, "Missing X-Auth-Key, X-Auth-Email or Authorization headers")
	}
	m := bearer.FindStringSubmatch(h)
	if m == nil {
		e := errorf(http.StatusBadRequest, CodeInvalidHeaders, "Invalid request headers")
		e.chain = []message{{Code: CodeBadAuthFormat, Message: "Invalid format for Authorization header"}}
		return e
	}
	if subtle.ConstantTimeCompare([]byte(m[1]), s.token) != 1 {
		return errorf(http.StatusForbidden, CodeAuthentication, "Authentication error")
	}
	return nil
}
