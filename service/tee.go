package service

import (
	"net/http"
	"strings"

	"github.com/kvshadow/kvshadow/kvapi"
)

// TeePath is where the front serves tee mode's endpoints (package ingest):
// TeePath+"ingest" and TeePath+"stage", beside the Workers KV API.
const TeePath = "/kvshadow/v1/"

// withTee serves TeePath with h and everything else with api. Any path
// under TeePath but the two reaches h as TeePath itself, which it answers
// 404 after its token check, so that no other is taken for one of them.
func withTee(h http.Handler) func(http.Handler) http.Handler {
	return func(api http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == TeePath+"ingest", r.URL.Path == TeePath+"stage":
				h.ServeHTTP(w, r)
			case strings.HasPrefix(r.URL.Path, TeePath):
				u := *r.URL
				u.Path, u.RawPath = TeePath, ""
				r2 := *r
				r2.URL = &u
				h.ServeHTTP(w, &r2)
			default:
				api.ServeHTTP(w, r)
			}
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
