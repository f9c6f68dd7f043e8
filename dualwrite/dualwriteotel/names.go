package dualwriteotel

import "go.opentelemetry.io/otel/attribute"

// ScopeName is the instrumentation scope of this package's spans and
// metrics.
const ScopeName = "github.com/kvshadow/kvshadow/dualwrite/dualwriteotel"

// Attribute keys of kvshadow's own, beside otelkv's (kvshadow.role,
// kvshadow.stage, kvshadow.outcome) and the semantic conventions'
// (db.namespace, error.type).
const (
	// OperationKey is the asynchronous operation: put, delete, compare,
	// repair.
	OperationKey = attribute.Key("kvshadow.operation")
	// KindKey is a comparison's compare.Kind.
	KindKey = attribute.Key("kvshadow.divergence.kind")
	// DropReasonKey says why an operation did not run.
	DropReasonKey = attribute.Key("kvshadow.drop.reason")
	// RepairOutcomeKey is how a dirty key's repair ended.
	RepairOutcomeKey = attribute.Key("kvshadow.repair.outcome")
	// BreakerStateKey is a breaker's state: closed, half-open, open.
	BreakerStateKey = attribute.Key("kvshadow.breaker.state")
	// BreakerPreviousKey is the state a breaker left.
	BreakerPreviousKey = attribute.Key("kvshadow.breaker.previous_state")
	// LateOutcomeKey is what became of a late tee copy: applied,
	// superseded, conflict, failed, held.
	LateOutcomeKey = attribute.Key("kvshadow.late.outcome")
	// ExcludedSourceKey says what was left out for an excluded key: write,
	// copy, read, journal.
	ExcludedSourceKey = attribute.Key("kvshadow.excluded.source")
	// RefusalReasonKey says why tee copies were refused.
	RefusalReasonKey = attribute.Key("kvshadow.refusal.reason")
)

// Metric names. Every metric of the project starts with "kvshadow.".
const (
	MetricAsyncOperations    = "kvshadow.dualwrite.async.operations"
	MetricAsyncDuration      = "kvshadow.dualwrite.async.duration"
	MetricAsyncWait          = "kvshadow.dualwrite.async.wait"
	MetricDrops              = "kvshadow.dualwrite.drops"
	MetricComparisons        = "kvshadow.dualwrite.comparisons"
	MetricDivergences        = "kvshadow.dualwrite.divergences"
	MetricRepairs            = "kvshadow.dualwrite.repairs"
	MetricVerifications      = "kvshadow.dualwrite.verifications"
	MetricBreakerTransitions = "kvshadow.dualwrite.breaker.transitions"

	// The gauges and counters that Watch reads from Stats.
	MetricStage                = "kvshadow.dualwrite.stage"
	MetricBreakerState         = "kvshadow.dualwrite.breaker.state"
	MetricQueueDepth           = "kvshadow.dualwrite.queue.depth"
	MetricQueueBytes           = "kvshadow.dualwrite.queue.bytes"
	MetricLaneDepth            = "kvshadow.dualwrite.lane.depth"
	MetricLaneCapacity         = "kvshadow.dualwrite.lane.capacity"
	MetricDirtyKeys            = "kvshadow.dualwrite.dirty.keys"
	MetricUnsettledKeys        = "kvshadow.dualwrite.unsettled.keys"
	MetricDirtyOverflow        = "kvshadow.dualwrite.dirty.overflow"
	MetricSuspectKeys          = "kvshadow.dualwrite.suspect.keys"
	MetricSuspectOverflow      = "kvshadow.dualwrite.suspect.overflow"
	MetricSuspicionsCleared    = "kvshadow.dualwrite.suspicions.cleared"
	MetricSettleRecovered      = "kvshadow.dualwrite.settle.recovered"
	MetricSuspectsSuperseded   = "kvshadow.dualwrite.suspicions.superseded"
	MetricCoalesced            = "kvshadow.dualwrite.coalesced"
	MetricReconciliationNeeded = "kvshadow.dualwrite.reconciliation.needed"
	MetricComparisonsSkipped   = "kvshadow.dualwrite.comparisons.skipped"
	MetricEventsLost           = "kvshadow.dualwrite.events.lost"
	MetricJournalOK            = "kvshadow.dualwrite.journal.ok"
	MetricJournalErrors        = "kvshadow.dualwrite.journal.errors"
	MetricJournalCommits       = "kvshadow.dualwrite.journal.commits"
	MetricJournalPending       = "kvshadow.dualwrite.journal.pending"
	MetricExcluded             = "kvshadow.dualwrite.excluded"
	MetricShadowBudgetDelayed  = "kvshadow.dualwrite.shadow_budget.delayed"
	MetricShadowBudgetDeferred = "kvshadow.dualwrite.shadow_budget.deferred"

	// The handover's: the fence before the flip, and the tee copies it
	// refused or that came late.
	MetricFenceRemaining   = "kvshadow.handover.fence_remaining"
	MetricStageKeyRewrites = "kvshadow.handover.stage_key.rewrites"
	MetricLateCopies       = "kvshadow.ingest.late_copies"
	MetricIngestRefused    = "kvshadow.ingest.refused"
)

// Span names of the asynchronous operations; each is a root of its own
// trace, linked to the caller's span.
const (
	SpanPut     = "dualwrite.put"
	SpanDelete  = "dualwrite.delete"
	SpanCompare = "dualwrite.compare"
	SpanRepair  = "dualwrite.repair"
)
