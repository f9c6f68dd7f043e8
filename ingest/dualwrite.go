package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// DualWrite is the Sink, ReadSink and StageReader of a proxy over
// dual-write stores: each batch's copies go to its namespace's
// Store.Ingest, as writes whose authoritative part is done, its reads to
// Store.CompareReads, which compares them with the shadow in the Shadow
// stage (in DualWrite they are ignored), and the stage endpoint answers
// from that store's stage.
type DualWrite struct {
	// Stores resolves a namespace ID to the store that serves it.
	Stores func(namespace string) (*dualwrite.Store, bool)
	// Account is the account ID the stage endpoint reports; optional.
	Account string
	// Lease is how long a tee may trust the stage answer (lease_ms), the
	// proxy's to set since its fence is derived from it; 0 says none, and
	// the tee keeps its own stageTtlMs.
	Lease time.Duration
	// Generation returns the generation of the stage document the
	// instance runs, which the stage endpoint reports; nil reports 0.
	Generation func() uint64
}

var (
	_ Sink        = (*DualWrite)(nil)
	_ ReadSink    = (*DualWrite)(nil)
	_ StageReader = (*DualWrite)(nil)
)

func (d *DualWrite) store(ns string) (*dualwrite.Store, error) {
	if d.Stores != nil {
		if st, ok := d.Stores(ns); ok && st != nil {
			return st, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownNamespace, ns)
}

// Ingest implements Sink. Off, where the shadow is not written, is
// ErrStage; from live on the copies are late copies, which the store
// orders, counts and never drops (dualwrite.Store.Ingest).
func (d *DualWrite) Ingest(ctx context.Context, namespace string, copies []Copy) error {
	st, err := d.store(namespace)
	if err != nil {
		return err
	}
	writes := make([]dualwrite.TeeWrite, len(copies))
	for i, c := range copies {
		writes[i] = dualwrite.TeeWrite{Key: c.Key, Delete: c.Deleted, Value: c.Value, Expiration: c.Expiration, Metadata: c.Metadata, At: c.AckedAt}
	}
	return stageError(st.Ingest(ctx, writes))
}

// CompareReads implements ReadSink. A stage where the primary is not
// authoritative is ErrStage, as for copies.
func (d *DualWrite) CompareReads(ctx context.Context, namespace string, reads []Read) (int, error) {
	st, err := d.store(namespace)
	if err != nil {
		return 0, err
	}
	tee := make([]dualwrite.TeeRead, len(reads))
	for i, r := range reads {
		tee[i] = dualwrite.TeeRead{Key: r.Key, Found: r.Found, SHA256: r.SHA256, Length: r.Length, Expiration: r.Expiration, At: r.ReadAt}
	}
	n, err := st.CompareReads(ctx, tee)
	return n, stageError(err)
}

func stageError(err error) error {
	if errors.Is(err, dualwrite.ErrIngestStage) {
		return fmt.Errorf("%w: %w", ErrStage, err)
	}
	return err
}

// Authority implements StageReader: MongoDB (the shadow) is authoritative
// from the Live stage on, and the tee routes through the proxy from the
// Handover stage on.
func (d *DualWrite) Authority(_ context.Context, namespace string) (Authority, error) {
	st, err := d.store(namespace)
	if err != nil {
		return Authority{}, err
	}
	stage := st.Stage()
	a := Authority{Stage: stage.String(), ShadowAuthoritative: stage.ShadowAuthoritative(), ThroughProxy: stage.RoutesThroughProxy(),
		Account: d.Account, Namespace: namespace, LeaseMS: d.Lease.Milliseconds(), ExcludePrefixes: st.ExcludedPrefixes()}
	if d.Generation != nil {
		a.Generation = d.Generation()
	}
	return a, nil
}
