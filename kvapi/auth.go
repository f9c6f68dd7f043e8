package kvapi

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"regexp"
)

// tokenChars is RFC 6750's b64token: the characters a bearer token is made
// of. Cloudflare's tokens are 40 of [A-Za-z0-9_-].
const tokenChars = `[A-Za-z0-9._~+/-]+=*`

// bearer is the form of a well-formed Authorization header.
var bearer = regexp.MustCompile(`^Bearer (` + tokenChars + `)$`)

// token is what a configured token may be: one a well-formed header can
// carry, so that a front never starts with a token no client can send.
var token = regexp.MustCompile(`^` + tokenChars + `$`)

// CheckToken reports whether tok can be sent as a bearer token (RFC 6750's
// b64token: letters, digits, "-._~+/", then "=" padding). A front, and the
// commands that read a token, refuse any other at start: a token with "#",
// white space or a non-ASCII byte could never match a request's header.
func CheckToken(tok string) error {
	if !token.MatchString(tok) {
		return fmt.Errorf("%w: a token is letters, digits and -._~+/ (then = padding), as a bearer token is written", ErrConfig)
	}
	return nil
}

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
	if !bearer.MatchString(h) {
		e := errorf(http.StatusBadRequest, CodeInvalidHeaders, "Invalid request headers")
		e.chain = []message{{Code: CodeBadAuthFormat, Message: "Invalid format for Authorization header"}}
		return e
	}
	// The match is the whole header: the token is what follows "Bearer ".
	if subtle.ConstantTimeCompare([]byte(h[len("Bearer "):]), s.token) != 1 {
		return errorf(http.StatusForbidden, CodeAuthentication, "Authentication error")
	}
	return nil
}
