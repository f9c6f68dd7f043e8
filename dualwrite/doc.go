// Package dualwrite is the composite kv.Store of the migration from Workers
// KV (the primary) to MongoDB (the shadow). The bot swaps its store for a
// *Store and changes nothing else; the stage moves the migration along, at
// run time.
//
// # Stages
//
//	stage      writes                                reads
//	off        primary                               primary
//	dualwrite  primary, then shadow                  primary
//	shadow     primary, then shadow                  primary; sampled compare with shadow
//	live       shadow (authoritative), then primary  shadow; sampled compare with primary
//	rampdown   shadow, then primary                  shadow
//	complete   shadow                                shadow
//
// SetStage changes the stage under load. A change that keeps the
// authoritative store waits only for the writes under way. A flip of the
// authoritative store (shadow to live, rampdown to dualwrite...) also holds
// new writes while it drains every lane, and is refused while keys are dirty
// (ErrUnsynced) or from off and complete, where the other store was not
// written (ErrStageTransition). Writes made in off are never copied: the
// initial backfill (shadow-report's repair mode) copies what existed before
// dualwrite.
//
// # Guarantees
//
// The caller gets the authoritative store's result and latency alone. Its
// write is synchronous; if it fails, the other store is not written (the
// key is marked dirty when the failure leaves in doubt whether the write
// landed). The copy to the other store is queued on the key's lane (a hash of
// the key picks one of Lanes bounded FIFO queues, each with one worker), so
// the other store applies each key's writes in the authoritative store's
// order: writes of one key hold a per-key lock from their authoritative
// write until their copy is queued, which orders concurrent writers of the
// same key (and only them). Copies carry the absolute expiry, in whole
// seconds, that the authoritative store received, so both stores expire a
// key at the same second.
//
// The caller never waits for the other store. A full lane, an open breaker, a
// failure or a timeout drops the copy, counts it (Stats.Drops) and marks the
// key dirty. Each copy has its own ShadowTimeout on the Store's clock; the
// caller's cancellation never reaches it, its context values (the trace
// context) do, through Observer.AsyncContext.
//
// A store that panics does not take the Store down with it: the panic is
// recovered, logged once per store with its stack (not its value, which may
// quote data), and becomes a *PanicError (kv.ErrPanicked): the caller's
// error for the authoritative store, with the key marked dirty since the
// write may have landed; a failed operation, like any other, for the other
// store. A Sink that panics loses that record, not its lane.
//
// A circuit breaker (sony/gobreaker) guards the non-authoritative store: it
// opens after consecutive failures, timeouts included; the caller's
// cancellation, inputs the other store refuses and operations abandoned at
// Close do not count. While open, copies are skipped and their keys marked
// dirty.
//
// # Dirty keys and repair
//
// The dirty set is bounded (MaxDirty); beyond it marks are counted and
// Stats.ReconciliationNeeded asks for a full reconciliation with
// shadow-report. Repair runs every RepairInterval, when a breaker closes,
// and on RepairDirty: each dirty key whose last write is older than the
// ConsistencyWindow (Workers KV serves old values for up to 60 s) is re-read
// from the authoritative store with its expiry and copied through its own
// lane, so it never races a newer write; a key missing there is deleted from
// the other store. A copy made too late for the contract's 60 s minimum
// expiry is clamped and stays dirty until the original has expired.
//
// # Comparisons
//
// In the shadow and live stages a share (CompareRate) of keys, chosen by a
// hash of the key, has its reads compared: what the caller read is handed to
// the key's lane, which reads the other store after the key's earlier copies
// and classifies both with package compare. A write that began after the
// caller's read makes the comparison Inconclusive; a difference inside the
// consistency window of the key's last write, or on a dirty key, is Pending.
// So the layer never reports as a divergence a difference of its own making.
// Divergences go to the Sink, redacted (no values; keys as a keyed hash by
// default).
//
// # Observability
//
// Stats returns a snapshot: stage, lane depth, drops by reason, dirty keys,
// repairs, comparisons by kind, breaker states. An Observer (WithObserver)
// receives the events; the telemetry package implements it, so that
// instrumentation wraps the Store rather than threading through it. Nothing
// is logged, observed or recorded under a lock of the Store.
//
// # Optional abilities
//
// A *Store is a kv.ExpiryGetter: GetEntry reads the authoritative store's
// GetEntry (errors.ErrUnsupported when it has none). It offers no bulk
// calls: a bulk write would bypass the per-key lanes, and the bot writes
// key by key; shadow-report uses the backends' bulk calls directly.
//
// # Lifecycle
//
// New starts one worker per lane, a timeout watchdog, the repair loop and an
// event loop; Close stops them all. Close drains the lanes until its context
// ends, then cancels what is under way and counts what was left
// (Stats.LeftAtClose) as dirty. After Close every call fails with an error
// matching kv.ErrClosed.
package dualwrite
