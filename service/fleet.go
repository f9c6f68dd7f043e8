package service

import (
	"sync/atomic"

	"github.com/kvshadow/kvshadow/assembly"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/ingest"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/service/admin"
)

// fleet is every namespace the instance serves (package assembly built
// them): the StatsSource of its gauges.
type fleet struct {
	ns  []*assembly.Served
	tee atomic.Pointer[ingest.Handler] // the tee endpoint, when served: its refused batches count in Stats
}

// store returns the dual-write store of a namespace: what tee mode's
// copies go to (ingest.DualWrite).
func (f *fleet) store(namespace string) (*dualwrite.Store, bool) {
	for _, s := range f.ns {
		if s.ID == namespace {
			return s.Dual, true
		}
	}
	return nil, false
}

// stores maps each namespace ID to what the front serves.
func (f *fleet) stores() map[string]kv.Store {
	m := make(map[string]kv.Store, len(f.ns))
	for _, s := range f.ns {
		m[s.ID] = s.Front
	}
	return m
}

// Stats sums the namespaces' snapshots: the gauges' source. The batches
// the tee endpoint refused whole count with the copies refused one by one.
func (f *fleet) Stats() dualwrite.Stats {
	all := make([]dualwrite.Stats, len(f.ns))
	for i, s := range f.ns {
		all[i] = s.Dual.Stats()
	}
	sum := admin.Sum(all...)
	for reason, n := range f.teeRefused() {
		sum.IngestRefused[dualwrite.IngestRefusal(reason)] += n
	}
	return sum
}

// teeRefused is what the tee endpoint refused whole, by error code; none
// before it serves.
func (f *fleet) teeRefused() map[string]uint64 {
	if tee := f.tee.Load(); tee != nil {
		return tee.Refused()
	}
	return nil
}

// NamespaceStats implements dualwriteotel.NamespacedSource: the fence's
// gauge is per namespace.
func (f *fleet) NamespaceStats() map[string]dualwrite.Stats {
	m := make(map[string]dualwrite.Stats, len(f.ns))
	for _, s := range f.ns {
		m[s.ID] = s.Dual.Stats()
	}
	return m
}
