package dualwriteotel

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv/otelkv"
)

// StatsSource is what Watch reads: a dualwrite.Store.
type StatsSource interface {
	Stats() dualwrite.Stats
}

// NamespacedSource is the optional ability of a StatsSource that sums
// several stores to give each one's Stats by namespace: the gauges that
// mean nothing summed (the handover fence) are then reported per
// namespace, with db.namespace.
type NamespacedSource interface {
	NamespaceStats() map[string]dualwrite.Stats
}

var breakerCodes = map[dualwrite.BreakerState]int64{
	dualwrite.BreakerClosed: 0, dualwrite.BreakerHalfOpen: 1, dualwrite.BreakerOpen: 2,
}

var roleSets = [2]metric.ObserveOption{
	metric.WithAttributes(otelkv.RoleKey.String(dualwrite.RolePrimary.String())),
	metric.WithAttributes(otelkv.RoleKey.String(dualwrite.RoleShadow.String())),
}

// Watch registers the gauges read from src's Stats, one snapshot per
// collection, and takes the current stage and breaker states for the
// span attributes. Unregister the result when the Store is closed.
func (o *Observer) Watch(src StatsSource) (metric.Registration, error) {
	st := src.Stats()
	o.stage.Store(uint32(st.Stage))
	for r, s := range st.Breakers {
		if int(r) < len(o.breakr) {
			v := string(s)
			o.breakr[r].Store(&v)
		}
	}
	in := o.inst
	reg, err := o.meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		st := src.Stats()
		obs.ObserveInt64(in.stage, int64(st.Stage))
		for r, s := range st.Breakers {
			if int(r) < len(roleSets) {
				obs.ObserveInt64(in.breaker, breakerCodes[s], roleSets[r])
			}
		}
		obs.ObserveInt64(in.queueDepth, st.Queued)
		obs.ObserveInt64(in.queueBytes, st.QueuedBytes)
		obs.ObserveInt64(in.laneDepth, int64(st.MaxLaneDepth))
		obs.ObserveInt64(in.laneCap, int64(st.LaneCapacity))
		obs.ObserveInt64(in.dirty, int64(st.Dirty))
		obs.ObserveInt64(in.unsettled, int64(st.Unsettled))
		obs.ObserveInt64(in.reconcile, flag(st.ReconciliationNeeded))
		obs.ObserveInt64(in.overflow, int64(st.DirtyOverflow))
		obs.ObserveInt64(in.suspects, int64(st.Suspects))
		obs.ObserveInt64(in.suspectOverflow, int64(st.SuspectOverflow))
		obs.ObserveInt64(in.cleared, int64(st.Cleared))
		obs.ObserveInt64(in.recovered, int64(st.Recovered))
		obs.ObserveInt64(in.superseded, int64(st.SuspectsSuperseded))
		obs.ObserveInt64(in.coalesced, int64(st.Coalesced))
		obs.ObserveInt64(in.skipped, int64(st.ComparisonsSkipped))
		obs.ObserveInt64(in.lost, int64(st.LostEvents))
		if st.Journal { // without one there is nothing to fail, and no series says otherwise
			obs.ObserveInt64(in.journalOK, flag(st.JournalOK))
			obs.ObserveInt64(in.journalErrors, int64(st.JournalErrors))
			obs.ObserveInt64(in.journalCommits, int64(st.JournalCommits))
			obs.ObserveInt64(in.journalPending, int64(st.JournalPending))
		}
		for _, o := range dualwrite.LateOutcomes {
			obs.ObserveInt64(in.lateCopies, int64(st.LateCopies[o]), metric.WithAttributes(LateOutcomeKey.String(string(o))))
		}
		obs.ObserveInt64(in.paceDelayed, int64(st.ShadowPacing.Delayed))
		obs.ObserveInt64(in.paceDeferred, int64(st.ShadowPacing.Deferred))
		x := st.Excluded
		for _, e := range [...]struct {
			source string
			n      uint64
		}{{"write", x.Writes}, {"copy", x.Copies}, {"read", x.Reads}, {"journal", x.Journal}} {
			obs.ObserveInt64(in.excluded, int64(e.n), metric.WithAttributes(ExcludedSourceKey.String(e.source)))
		}
		for r, n := range st.IngestRefused {
			obs.ObserveInt64(in.refused, int64(n), metric.WithAttributes(RefusalReasonKey.String(string(r))))
		}
		if ns, ok := src.(NamespacedSource); ok {
			for id, s := range ns.NamespaceStats() {
				obs.ObserveFloat64(in.fence, s.Fence.Remaining.Seconds(), metric.WithAttributes(semconv.DBNamespace(id)))
				obs.ObserveInt64(in.keyRewrites, int64(s.StageKey.Rewrites), metric.WithAttributes(semconv.DBNamespace(id)))
			}
		} else {
			obs.ObserveFloat64(in.fence, st.Fence.Remaining.Seconds())
			obs.ObserveInt64(in.keyRewrites, int64(st.StageKey.Rewrites))
		}
		return nil
	}, in.stage, in.breaker, in.queueDepth, in.queueBytes, in.laneDepth, in.laneCap, in.dirty, in.unsettled, in.reconcile,
		in.overflow, in.skipped, in.lost, in.journalOK, in.journalErrors, in.lateCopies, in.refused, in.excluded, in.paceDelayed, in.paceDeferred, in.fence, in.keyRewrites,
		in.suspects, in.suspectOverflow, in.cleared, in.recovered, in.superseded, in.coalesced, in.journalCommits, in.journalPending)
	if err != nil {
		return nil, fmt.Errorf("dualwriteotel: %w", err)
	}
	return reg, nil
}

func flag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
