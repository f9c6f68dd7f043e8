package service

import (
	"net/http"
	"strings"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kvapi"
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

// clientKey is the front's ServeConfig.ClientKey: the remote address, with
// the tee's requests a client apart, so that requests of the Workers KV API
// from the tee's address never take the slots its batches need.
func clientKey(r *http.Request) string {
	if strings.HasPrefix(r.URL.Path, TeePath) {
		return "tee " + kvapi.RemoteHost(r)
	}
	return kvapi.RemoteHost(r)
}
