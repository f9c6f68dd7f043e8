package kvapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// net/http answers some requests itself, before any handler runs, in plain
// text: a request line it cannot parse (a bad %-escape, a control character
// such as a raw NUL), a malformed header, headers over the size limit, an
// unknown transfer encoding. A client of the API expects Cloudflare's
// envelope on every refusal, so an HTTPServer serves each connection
// through an envelopeConn, which replaces those answers with an envelope of
// the same status.
//
// Only what net/http writes while no handler is serving the connection is
// replaced: a handler's responses, values included, pass untouched, however
// they begin. A connection is "serving" from the moment a handler starts
// (the handler marks it) until net/http reports it idle again, after the
// response is flushed (http.Server.ConnState).

type envelopeListener struct{ net.Listener }

func (l envelopeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &envelopeConn{Conn: c}, nil
}

type envelopeConn struct {
	net.Conn
	serving atomic.Bool

	mu       sync.Mutex
	broken   bool               // a read failed: the connection is done
	cancel   context.CancelFunc // ends the context of the request served (deadline.go)
	base     context.Context    // the requests' parent, the connection's values (deadline.go)
	writeDue time.Time          // the write deadline net/http set last (deadline.go)
}

type connKey struct{}

// connContext is the http.Server's ConnContext: it lets the handler find
// its connection.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if ec, ok := c.(*envelopeConn); ok {
		return context.WithValue(ctx, connKey{}, ec)
	}
	return ctx
}

// connState is the http.Server's ConnState: once a response is written
// the connection is no longer serving.
func connState(c net.Conn, state http.ConnState) {
	if ec, ok := c.(*envelopeConn); ok && state != http.StateActive {
		ec.serving.Store(false)
	}
}

func markServing(r *http.Request) {
	if ec, ok := r.Context().Value(connKey{}).(*envelopeConn); ok {
		ec.serving.Store(true)
	}
}

func (c *envelopeConn) Write(p []byte) (int, error) {
	if !c.serving.Load() {
		if status, ok := rawStatus(p); ok {
			if _, err := c.Conn.Write(rawEnvelope(status)); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.Conn.Write(p)
}

// rawStatus reads the status of a refusal net/http writes itself.
func rawStatus(p []byte) (int, bool) {
	rest, ok := bytes.CutPrefix(p, []byte("HTTP/1.1 "))
	if !ok || len(rest) < 3 {
		return 0, false
	}
	status, err := strconv.Atoi(string(rest[:3]))
	if err != nil || status < 400 || status > 599 {
		return 0, false
	}
	return status, true
}

// rawEnvelope is the whole response that replaces net/http's own.
func rawEnvelope(status int) []byte {
	code, msg := CodeInvalidRequest, "invalid request: the request could not be parsed (a bad %-escape, a control character, a malformed or oversized header)"
	if status >= 500 {
		code, msg = CodeInvalidRequest, "invalid request: the server does not implement what the request asks for"
	}
	return rawResponse(status, code, msg, "")
}

// rawResponse is a whole response, written on a connection no handler
// serves: an envelope with one error, headers (each ending "\r\n") added.
func rawResponse(status, code int, msg, headers string) []byte {
	body, _ := json.Marshal(envelope{Errors: []message{{Code: code, Message: msg}}, Messages: []message{}})
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%sConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), headers, body)
}
