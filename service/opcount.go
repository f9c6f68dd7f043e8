package service

import (
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/kvshadow/kvshadow/service/admin"
)

// opCounter counts the Workers KV API requests the front answers, for GET
// /stats: operations, and errors (answers of 500 and above; a client's
// mistake, 4xx, is no error).
type opCounter struct {
	ops, errs atomic.Uint64
}

func (c *opCounter) counts() admin.Operations {
	return admin.Operations{Operations: c.ops.Load(), Errors: c.errs.Load()}
}

// wrap counts what h answers.
func (c *opCounter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := statusWriters.Get().(*statusWriter)
		*rec = statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		c.ops.Add(1)
		if rec.status >= 500 {
			c.errs.Add(1)
		}
		// net/http holds no handler's writer once the handler returned.
		*rec = statusWriter{}
		statusWriters.Put(rec)
	})
}

// statusWriters are reused from one request to the next: a request costs
// no writer of its own.
var statusWriters = sync.Pool{New: func() any { return new(statusWriter) }}

// statusWriter keeps the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
