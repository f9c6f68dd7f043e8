package dualwriteotel

import (
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/kvshadow/kvshadow/kv/otelkv"
)

type instruments struct {
	asyncOps    metric.Int64Counter
	asyncDur    metric.Float64Histogram
	asyncWait   metric.Float64Histogram
	drops       metric.Int64Counter
	comparisons metric.Int64Counter
	divergences metric.Int64Counter
	repairs     metric.Int64Counter
	verified    metric.Int64Counter
	transitions metric.Int64Counter

	stage, breaker, queueDepth, queueBytes, laneDepth, laneCap, dirty, unsettled, reconcile, journalOK metric.Int64ObservableGauge
	suspects, journalPending                                                                           metric.Int64ObservableGauge
	overflow, skipped, lost, journalErrors, journalCommits                                             metric.Int64ObservableCounter
	suspectOverflow, cleared, recovered, superseded, coalesced                                         metric.Int64ObservableCounter
	lateCopies, refused                                                                                metric.Int64ObservableCounter
	excluded, paceDelayed, paceDeferred, keyRewrites                                                   metric.Int64ObservableCounter
	fence                                                                                              metric.Float64ObservableGauge

	sets setCache
}

func newInstruments(m metric.Meter) (*instruments, error) {
	in := &instruments{}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return g
	}
	observed := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	in.asyncOps = counter(MetricAsyncOperations, "{operation}", "Asynchronous operations that ran, by operation, target role and outcome.")
	var err error
	in.asyncDur, err = m.Float64Histogram(MetricAsyncDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of asynchronous operations on the store's clock, by operation, target role and outcome."),
		metric.WithExplicitBucketBoundaries(otelkv.DurationBuckets...))
	errs = append(errs, err)
	in.asyncWait, err = m.Float64Histogram(MetricAsyncWait, metric.WithUnit("s"),
		metric.WithDescription("Time asynchronous operations waited in their lane before they ran, on the store's clock, by operation, target role and outcome."),
		metric.WithExplicitBucketBoundaries(otelkv.DurationBuckets...))
	errs = append(errs, err)
	in.drops = counter(MetricDrops, "{operation}", "Operations that did not reach the other store, by operation, target role and reason; a dropped write leaves its key dirty.")
	in.comparisons = counter(MetricComparisons, "{comparison}", "Classified read comparisons, by kind and namespace.")
	in.divergences = counter(MetricDivergences, "{comparison}", "Divergences confirmed by a verification read after the consistency window, by kind and namespace.")
	in.verified = counter(MetricVerifications, "{key}", "Verification reads of unsettled keys after the consistency window, by kind (match settles the key, suspected is a first difference) and namespace.")
	in.repairs = counter(MetricRepairs, "{key}", "Repairs of dirty keys, by outcome and namespace.")
	in.transitions = counter(MetricBreakerTransitions, "{transition}", "Circuit breaker state changes, by role and states.")

	in.stage = gauge(MetricStage, "{stage}", "The migration stage: 0 off, 1 dualwrite, 2 shadow, 3 handover, 4 live, 5 rampdown, 6 complete.")
	in.breaker = gauge(MetricBreakerState, "{state}", "Each store's circuit breaker: 0 closed, 1 half-open, 2 open.")
	in.queueDepth = gauge(MetricQueueDepth, "{operation}", "Asynchronous operations queued or running, over all lanes.")
	in.queueBytes = gauge(MetricQueueBytes, "By", "Bytes of values held by queued operations.")
	in.laneDepth = gauge(MetricLaneDepth, "{operation}", "Operations queued in the fullest lane.")
	in.laneCap = gauge(MetricLaneCapacity, "{operation}", "Operations a lane holds before it drops (LaneDepth).")
	in.dirty = gauge(MetricDirtyKeys, "{key}", "Keys whose copy in the other store may be wrong, awaiting repair.")
	in.unsettled = gauge(MetricUnsettledKeys, "{key}", "Keys whose copy was sent to the other store and not yet verified after the consistency window.")
	in.reconcile = gauge(MetricReconciliationNeeded, "{flag}", "1 once the dirty set has overflowed, until a reconciliation is acknowledged.")
	in.overflow = observed(MetricDirtyOverflow, "{key}", "Dirty marks refused because the dirty set was full.")
	in.suspects = gauge(MetricSuspectKeys, "{key}", "Keys that only a sampled read found different, held by the confirmation rule until a verification read a window later confirms or clears the difference; not in the settle set. A rising count is the early sign of a divergence.")
	in.suspectOverflow = observed(MetricSuspectOverflow, "{key}", "Suspicions dropped because the suspects were full (MaxSuspects): their keys are not verified.")
	in.superseded = observed(MetricSuspectsSuperseded, "{key}", "Suspects that a write through the store took into the settle set before a verification read confirmed or cleared them: the key then waits for the verification of that write.")
	in.cleared = observed(MetricSuspicionsCleared, "{key}", "Held differences (suspects, and differences held on keys of the settle set) that a later verification read found gone.")
	in.recovered = observed(MetricSettleRecovered, "{key}", "Keys the settle journal named after a restart that their first verification found different (a copy that may have died with the process): repaired as dirty keys, never reported as divergences unless they still differ after the repair.")
	in.coalesced = observed(MetricCoalesced, "{operation}", "Copies replaced in their lane by a newer write of the same key before they ran; the newer copy keeps the older one's place.")
	in.skipped = observed(MetricComparisonsSkipped, "{comparison}", "Sampled comparisons not made (lane full, breaker open, stage change, closing).")
	in.lost = observed(MetricEventsLost, "{event}", "Breaker events the observer missed because it fell behind.")
	in.journalOK = gauge(MetricJournalOK, "{flag}", "1 while the settle journal's last commit succeeded, 0 while it fails; reported only with a journal.")
	in.journalErrors = observed(MetricJournalErrors, "{commit}", "Settle journal commits that failed, and marks its Recorder refused; reported only with a journal.")
	in.journalCommits = observed(MetricJournalCommits, "{commit}", "Settle journal commits that succeeded; reported only with a journal.")
	in.journalPending = gauge(MetricJournalPending, "{mark}", "Settle set changes awaiting the settle journal's next commit, besides the group a commit under way holds: the marks a crash of the machine now would lose; reported only with a journal.")
	in.lateCopies = observed(MetricLateCopies, "{copy}", "Tee copies that arrived while MongoDB was authoritative, by outcome: applied (the last acknowledged write), superseded, conflict (reported for the operator), failed.")
	in.excluded = observed(MetricExcluded, "{operation}", "Writes, tee copies, sampled reads and journal entries left out because their key is under an excluded prefix (--exclude-prefix, and kvshadow's reserved __kvshadow:), by source.")
	in.paceDelayed = observed(MetricShadowBudgetDelayed, "{operation}", "Operations toward the shadow (copies, comparisons, verification reads) that waited for its request budget (--shadow-rate).")
	in.paceDeferred = observed(MetricShadowBudgetDeferred, "{key}", "Repairs toward the shadow put off to a later pass because its request budget (--shadow-rate) had no room.")
	in.refused = observed(MetricIngestRefused, "{copy}", "Tee copies refused, by reason: an acknowledged-at time out of bounds (the key is verified instead), or a batch the ingest endpoint refused whole.")
	in.keyRewrites = observed(MetricStageKeyRewrites, "{rewrite}", "Reads of __kvshadow:stage in Workers KV that found it missing or not as the proxy wrote it (deleted or overwritten around the proxy), each followed by a rewrite; per namespace.")
	in.fence, err = m.Float64ObservableGauge(MetricFenceRemaining, metric.WithUnit("s"),
		metric.WithDescription("Seconds until the handover fence lets the flip between handover and live go, per namespace; 0 when clear or in another stage."))
	errs = append(errs, err)
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("dualwriteotel: %w", err)
		}
	}
	in.sets.m = make(map[setKey]*attrSet)
	return in, nil
}

// The metrics whose attribute sets setCache builds.
const (
	mAsync   = iota // operation, role, outcome
	mDrops          // operation, role, reason
	mCompare        // kind, namespace
	mRepair         // outcome, namespace
	mBreaker        // role, from, to
)

type setKey struct {
	metric  int
	a, b, c string
}

type attrSet struct {
	add []metric.AddOption
	rec []metric.RecordOption
}

// setCache keeps the attribute sets of the event metrics, so that an event
// allocates only the first time its combination is seen. Namespaces come
// from keys, so the cache is bounded: past maxSets a set is built per event.
type setCache struct {
	mu sync.RWMutex
	m  map[setKey]*attrSet
}

const maxSets = 4096

func (c *setCache) get(metricID int, a, b, cc string) *attrSet {
	k := setKey{metricID, a, b, cc}
	c.mu.RLock()
	s, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return s
	}
	opt := metric.WithAttributeSet(attribute.NewSet(attrsOf(k)...))
	s = &attrSet{add: []metric.AddOption{opt}, rec: []metric.RecordOption{opt}}
	c.mu.Lock()
	if len(c.m) < maxSets {
		c.m[k] = s
	}
	c.mu.Unlock()
	return s
}

func attrsOf(k setKey) []attribute.KeyValue {
	switch k.metric {
	case mAsync:
		return []attribute.KeyValue{OperationKey.String(k.a), otelkv.RoleKey.String(k.b), otelkv.OutcomeKey.String(k.c)}
	case mDrops:
		return []attribute.KeyValue{OperationKey.String(k.a), otelkv.RoleKey.String(k.b), DropReasonKey.String(k.c)}
	case mCompare:
		return []attribute.KeyValue{KindKey.String(k.a), semconv.DBNamespace(k.b)}
	case mRepair:
		return []attribute.KeyValue{RepairOutcomeKey.String(k.a), semconv.DBNamespace(k.b)}
	default:
		return []attribute.KeyValue{otelkv.RoleKey.String(k.a), BreakerPreviousKey.String(k.b), BreakerStateKey.String(k.c)}
	}
}
