package kvapi

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
)

// isToken reports whether tok is RFC 6750's b64token, the characters a
// bearer token is made of: one or more of [A-Za-z0-9._~+/-], then any "="
// padding. Cloudflare's tokens are 40 of [A-Za-z0-9_-]. A loop, not a
// regexp: every request's header is checked.
func isToken(tok string) bool {
	i := 0
	for i < len(tok) && isTokenByte(tok[i]) {
		i++
	}
	if i == 0 {
		return false
	}
	for ; i < len(tok); i++ {
		if tok[i] != '=' {
			return false
		}
	}
	return true
}

func isTokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '-'
}

// bearerToken returns the token of a well-formed Authorization header,
// "Bearer " and a b64token, and whether it is one.
func bearerToken(h string) (string, bool) {
	tok, ok := strings.CutPrefix(h, "Bearer ")
	return tok, ok && isToken(tok)
}

// CheckToken reports whether tok can be sent as a bearer token (RFC 6750's
// b64token: letters, digits, "-._~+/", then "=" padding). A front, and the
// commands that read a token, refuse any other at start: a token with "#",
// white space or a non-ASCII byte could never match a request's header.
func CheckToken(tok string) error {
	if !isToken(tok) {
		return fmt.Errorf("%w: a token is letters, digits and -._~+/ (then = padding), as a bearer token is written", ErrConfig)
	}
	return nil
}

// authorize checks the client's credentials as Cloudflare does (the codes
// are in the package doc).
func (s *Server) authorize(r *http.Request) *apiError {
	if !s.RequiresToken() {
		return nil
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		if r.Header.Get("X-Auth-Key") != "" {
			return s.refuseToken()
		}
		return errorf(http.StatusBadRequest, CodeMissingAuth, "Missing X-Auth-Key, X-Auth-Email or Authorization headers")
	}
	tok, ok := bearerToken(h)
	if !ok {
		e := errorf(http.StatusBadRequest, CodeInvalidHeaders, "Invalid request headers")
		e.chain = []message{{Code: CodeBadAuthFormat, Message: "Invalid format for Authorization header"}}
		return e
	}
	if subtle.ConstantTimeCompare([]byte(tok), s.token) != 1 {
		return s.refuseToken()
	}
	return nil
}

func (s *Server) refuseToken() *apiError {
	if s.refusal != "" {
		return &apiError{status: http.StatusUnauthorized, code: CodeAuthentication, message: s.refusal}
	}
	return errorf(http.StatusForbidden, CodeAuthentication, "Authentication error")
}
