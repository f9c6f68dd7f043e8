package service

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/ingest"
)

// TeePath is where the front serves tee mode's endpoints (package ingest):
// TeePath+"ingest" and TeePath+"stage", beside the Workers KV API.
const TeePath = "/kvshadow/v1/"

// tee hands tee mode's copies to the namespaces' dual-write stores and
// tells a tee the stage. It is the ingest.Sink and ingest.StageReader of
// the front.
type tee struct {
	fleet   *fleet
	account string
}

var (
	_ ingest.Sink        = tee{}
	_ ingest.StageReader = tee{}
)

func (t tee) find(namespace string) (*served, error) {
	for _, s := range t.fleet.ns {
		if s.id == namespace {
			return s, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ingest.ErrUnknownNamespace, namespace)
}

// Ingest implements ingest.Sink: the writes the primary has acknowledged
// go onto their keys' lanes, and into the settle set as unsettled.
func (t tee) Ingest(ctx context.Context, namespace string, copies []ingest.Copy) error {
	s, err := t.find(namespace)
	if err != nil {
		return err
	}
	writes := make([]dualwrite.TeeWrite, len(copies))
	for i, c := range copies {
		writes[i] = dualwrite.TeeWrite{Key: c.Key, Delete: c.Deleted, Value: c.Value, Expiration: c.Expiration, At: c.AckedAt}
		if len(c.Metadata) > 0 {
			writes[i].Metadata = c.Metadata
		}
	}
	err = s.dual.Ingest(ctx, writes)
	if errors.Is(err, dualwrite.ErrIngestStage) {
		return fmt.Errorf("%w: %w", ingest.ErrStage, err)
	}
	return err
}

// Authority implements ingest.StageReader.
func (t tee) Authority(_ context.Context, namespace string) (ingest.Authority, error) {
	s, err := t.find(namespace)
	if err != nil {
		return ingest.Authority{}, err
	}
	st := s.dual.Stage()
	return ingest.Authority{Stage: st.String(), ShadowAuthoritative: st >= dualwrite.Live, Account: t.account, Namespace: s.id}, nil
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
