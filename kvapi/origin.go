package kvapi

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// A front or admin API that serves without a token trusts whoever reaches
// its loopback listener. A web page in the operator's browser reaches it
// too: a cross-origin "simple" request (a POST of text/plain) needs no
// preflight, and a DNS-rebinding name (attacker.example resolving to
// 127.0.0.1) makes the page same-origin with the listener. Both carry the
// page's marks, which no local tool sends: a Host that is not the
// listener's own loopback name or address, an Origin of another site, a
// Sec-Fetch-Site other than same-origin or none. CheckLocal refuses them.

// ErrForeignRequest reports a request a web page of another origin or host
// name could have sent: refused where no token guards the listener.
var ErrForeignRequest = errors.New("kvapi: refused: the request names another host or comes from another origin, and this listener serves without a token")

// CheckLocal returns ErrForeignRequest for a request with the marks above (an
// Origin must be a loopback name with the listener's port). A request without
// those browser headers, as curl, SDKs and the project's own clients send it,
// passes.
func CheckLocal(r *http.Request) error {
	port := ""
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		port = strconv.Itoa(a.Port)
	}
	// The Host's name is what a rebinding page cannot choose; its port is
	// the one the browser connected to, so it needs no check.
	if !localHost(r.Host, "", false) {
		return ErrForeignRequest
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return ErrForeignRequest
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !localHost(u.Host, port, u.Scheme == "https") {
			return ErrForeignRequest
		}
	}
	return nil
}

// IsLoopback reports whether addr (host:port) is a loopback name or
// address: what only this machine reaches.
func IsLoopback(addr string) bool { return localHost(addr, "", false) }

// localHost reports whether hostport is a loopback name or address, with
// port (its scheme's default when it names none); port "" checks the name
// alone.
func localHost(hostport, port string, https bool) bool {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		host, p = hostport, ""
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if p == "" {
		p = "80"
		if https {
			p = "443"
		}
	}
	if port != "" && p != port {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// localOnly wraps h so that it serves only what CheckLocal passes,
// refusing the rest with 403 in Cloudflare's envelope.
func localOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if CheckLocal(r) != nil {
			markServing(r)
			writeError(w, errorf(http.StatusForbidden, CodeAuthentication, "Authentication error: this front serves without a token, so it takes no request from another origin or for another host name"))
			return
		}
		h.ServeHTTP(w, r)
	})
}
