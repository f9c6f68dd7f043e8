package service

import (
	"net/http"
	"strings"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// TeePath is where the front serves tee mode's endpoints (package ingest):
// TeePath+"ingest" and TeePath+"stage", beside the Workers KV API.
const TeePath = "/kvshadow/v1/"

// store returns the dual-write store of a namespace: what tee mode's
// copies go to (ingest.DualWrite).
func (f *fleet) store(namespace string) (*dualwrite.Store, bool) {
	for _, s := range f.ns {
		if s.id == namespace {
			return s.dual, true
		}
	}
	return nil, false
}

// withTee serves TeePath with h and everything else with api.
func withTee(h http.Handler) func(http.Handler) http.Handler {
	return func(api http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, TeePath) {
				h.ServeHTTP(w, r)
				return
			}
			api.ServeHTTP(w, r)
		})
	}
}
