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
//	handover   primary, then shadow                  primary; sampled compare with shadow
//	live       shadow (authoritative), then primary  shadow; sampled compare with primary
//	rampdown   shadow, then primary                  shadow
//	complete   shadow                                shadow
//
// Handover differs from shadow only outside the Store: tee mode's Workers
// send every read and write through the proxy instead of their binding
// (Stage.RoutesThroughProxy), so that when MongoDB becomes authoritative
// the proxy is the only writer it has to trust.
//
// The stage machine is CheckTransition, which SetStage, package control
// and the admin API all apply: the stage moves one step along the table,
// forward or back, and complete is one-way (Workers KV is not written
// there, so a way back would make a stale store authoritative). Every
// refusal (ErrStageTransition) names the next allowed steps. No skip is
// safe: see CheckTransition.
//
// SetStage changes the stage under load. A change that keeps the
// authoritative store waits only for the writes under way. The one flip of
// the authoritative store, handover to live (or back), also holds new
// writes while it drains every lane, and is refused while keys are dirty
// (ErrUnsynced). Writes made in off are never copied: the initial backfill
// (shadow-report's repair mode) copies what existed before dualwrite.
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
// The caller never waits for the other store. A newer write of a key whose
// copy still waits in its lane replaces that copy (Stats.Coalesced), which
// keeps its place; the order of distinct keys is untouched. A full lane,
// an open breaker, a failure or a timeout drops the copy, counts it
// (Stats.Drops) and marks the key dirty. Each copy has its own timeout on
// the Store's clock, ShadowTimeout and a second for each ShadowThroughput
// of bytes it carries (a 25 MiB copy: 5 s + 25 s by default); the
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
// dirty. While it is closed with no failure counted since the last success,
// a success skips gobreaker (a mutex every lane would share) and only a
// failure is reported to it; the breaker opens no later than gobreaker
// alone would open it.
//
// # The settle set
//
// Every key written through the Store in a stage that writes both stores
// is in the settle set until it is settled: dirty (its copy is known lost:
// a full lane, an open breaker, a failed or abandoned copy, an
// authoritative write whose outcome was in doubt) or unsettled (its copy
// was sent, not yet verified). The mark is made under the key's lock,
// before the write reaches the authoritative store. The set is bounded
// (MaxDirty); beyond it marks are counted and Stats.ReconciliationNeeded
// asks for a full reconciliation with shadow-report. settle.go lists its
// states and transitions.
//
// Verification runs every RepairInterval, when a breaker closes, and on
// Settle: each unsettled key whose last write, and its own copy, are older
// than the ConsistencyWindow (Workers KV serves old values for up to 60 s)
// is read from both stores in bulk (VerifyBatch keys a request), at most
// 25 MiB of values a read (a read refused as too large is asked again in
// halves, so a large key costs its own reads), and classified with package
// compare. Equal, it leaves the set. Different, the confirmation rule
// below decides: the same difference a window later is confirmed,
// reported to the Sink, and the key becomes dirty. Reads of the primary
// wait on PrimaryBudget, of the shadow on ShadowBudget, never a caller's
// request. A pass finds the keys due at a cost in proportion to their
// number, never a scan of the set under the lock writes take
// (BenchmarkSettleSetDue); a key costs an entry, the map's slot and its
// bytes (BenchmarkSettleSetMemory; docs/performance.md).
//
// A sampled read that disagrees (the Store's own, or a tee's through
// CompareReads) holds its difference on the key's entry when the key is in
// the set; any other key becomes a suspect, in a bounded set of its own
// (MaxSuspects, Stats.Suspects), never journaled, verified by the same
// passes and rule; beyond the bound a suspicion is counted
// (Stats.SuspectOverflow) and dropped. Reads, which anyone holding the
// token can send for any key, never take a slot of the set nor raise
// ReconciliationNeeded; a suspect whose difference is confirmed joins the
// set, dirty.
//
// Repair runs with verification and on RepairDirty: each dirty key whose
// own last write is older than the window is read in its own lane (so it
// never races a newer write through this Store), from the authoritative
// store and then the other. Equal, the key settles (RepairUnneeded).
// Different, it is copied only by the confirmation rule: a confirmed
// divergence's difference has held, and is copied at once; a lost copy's
// is held at the first repair and copied at the next, a window later, if
// neither side changed. A key missing at the authoritative store is
// deleted from the other. A repaired key is unsettled until verified. A
// copy made too late for the contract's 60 s minimum expiry is clamped and
// stays dirty until the original has expired.
//
// With a Journal (package journal) the set is durable: its changes are
// committed in groups by the Store's own goroutine, never on the caller's
// path; only a key entering the set, changing state or leaving it is
// written. A Journal that is a Recorder keeps each new mark at once, in
// memory the operating system holds for its file, so that it survives the
// process's death without the caller waiting on the disk. New loads the
// journal and verifies every key in it a window after the start; Close
// leaves in it exactly the keys not settled. A key the journal names after
// a restart is known, not news: its copy may have died with the process.
// When its first verification finds the stores different it becomes dirty
// at once, is repaired like any dirty key and counted in Stats.Recovered,
// never reported.
//
// # Confirmation
//
// A divergence is confirmed only when two reads of both stores, at T1 and
// at T2 >= T1 + ConsistencyWindow, found the same difference (the same
// primary state and the same shadow state, each by presence, SHA-256 and
// length of the value, expiry in whole seconds and metadata); the Store
// saw no write of the key between them (each clears the held difference);
// and no instance of the fleet had a write on its way to the other store,
// of any key, made before T1. The first read may be a sampled
// comparison's (a tee's digest counts as the primary's state), the second
// is always a verification's.
//
// "No write on its way" is fleet-wide. Each Store keeps a low watermark
// (Watermark): the time of the oldest write it knows may not have reached
// the other store (from its mark, before the authoritative write: a copy
// queued or running; a dirty key, until repaired; a key its journal named,
// until verified), or now. Each instance publishes its stores' watermarks
// with every heartbeat (package control), and the Fleet gives each Store
// the oldest another live instance published, or the time the heartbeats
// were read. A pass samples that watermark W before it reads, and confirms
// a difference first seen at T1 only if T1 < W: every write any instance
// made before T1 had then landed, or was known lost to its writer, which
// repairs it. The same difference read at T2 is then no copy on its way: a
// newer write changes the primary's side or, landing, the shadow's. Until
// W passes T1 the key is not read again. A stale read of the primary
// cannot confirm either: a value it no longer held at T1 + window cannot
// be read at T2, so the primary's side changes and the wait restarts.
//
// A dead instance holds nobody back for long: its heartbeat counts until
// it is LiveFor old (three heartbeat intervals by default); its queued
// copies died with it, and its journal verifies their keys when it
// restarts. A live one must never be taken for dead, or its queued copies
// would be confirmed as divergences: its heartbeats keep their cadence and
// the Target's Report has half an interval (package control). While the
// heartbeats cannot be read the watermark stays where it was. Clocks of
// instances must agree to well within a heartbeat interval (NTP). A tee's
// write is known only from the moment its copy reaches a Store (Ingest).
//
// One difference is reported once by the fleet: the instance whose rule
// confirms it first claims it (Fleet.Claim: a document named by a SHA-256
// of the key and both states, never the key) and reports it; another that
// confirms the same difference within four windows counts it in
// Stats.ReportedElsewhere and repairs its key without a report. A claim
// the board fails is reported anyway (Stats.ClaimErrors): twice rather
// than never.
//
// The cost: no request per key verified (the watermarks ride on the
// heartbeats), one request per difference confirmed, 8 bytes an entry; a
// confirmation comes at T1 + window or, when later, at the first pass
// after a heartbeat read that shows every other live instance's watermark
// past T1 (docs/performance.md). What is confirmed is a change around the
// layer (a write to either store not made through it, an expiry or a loss
// in the store), or a copy overtaken at the other store by an older copy
// from another instance (lanes order one process's copies, not two
// processes'). A report does not promise that the primary still holds P
// when it is made: a newer write's copy moves the other store on, and its
// writer verifies it.
//
// A repair never moves the other store to a value older than the one it
// holds (its reads: Repair, above). The value copied was the
// authoritative store's from T1 on; the one replaced was in the other
// store at T1, so acknowledged before it or never. What is left is a copy
// from another instance landing between the repair's read of the other
// store and its write, one round trip; that copy's writer verifies its key
// after its window, and the rule repairs it forward.
//
// # Repairs never delete in bulk
//
// A repair deletes a key from the other store when the authoritative store
// has none; an authoritative store that is empty by mistake (a new or
// mistyped database, which package control refuses at start: control.Read)
// would have every key deleted so. The repairs of a pass delete at once
// only when the pass holds no more dirty keys than the deletes left,
// MaxRepairDeletes (100) since the Store's start or the last AllowDeletes;
// any other pass's deletes are counted after its last repair has run, and
// made if they fit in what is left, else held, all of them (RepairHeld;
// Stats.DeletesHeld, logged once), their keys dirty (a flip waits), until
// AllowDeletes or until each is settled otherwise (a reconciliation). A
// count, not a share of the other store's keys: counting Workers KV's keys
// means listing them all (the account's API budget), while a repaired
// delete is rare (only a delete whose copy was lost), so 100 covers an
// outage's deletes and a held delete costs an operator's call, never a
// key. A restart starts the count again.
//
// # One instance, several, and a crash
//
// One instance: every acknowledged write of a mirrored stage reaches the
// other store, in the authoritative order for its key, or leaves its key
// dirty; every key ends settled (both stores verified equal after the
// window) or in the settle set, reported by Stats and DirtyKeys,
// UnsettledKeys.
//
// N instances over the same stores: per-process lanes cannot order two
// processes' writes of one key, so the other store may end with the older
// of two concurrent writes; each instance settles the keys it wrote, by the
// confirmation rule. What no instance wrote (a write around the layer) is
// found only by a full reconciliation, or by the sampled comparison of a
// read.
//
// Crash: without a Journal the settle set and the queued copies die with
// the process; only a full reconciliation finds their keys. With a
// Recorder (package journal's), the death of the process (SIGKILL, a
// panic, the OOM killer) loses no mark: every key whose write was
// acknowledged or in flight is in the set after the restart. A crash of
// the machine loses at most the marks made since the last commit that
// completed began: the keys first written (or first dirtied) in the last
// two commit times, as package journal states and measures; a key already
// in the journal loses nothing when it is written again.
//
// # Observability
//
// Stats returns a snapshot: stage, lane depth, drops by reason, dirty keys,
// repairs, comparisons by kind, breaker states. An Observer (WithObserver)
// receives the events; the telemetry package implements it, so that
// instrumentation wraps the Store rather than threading through it. Nothing
// is logged, observed or recorded under a lock of the Store.
//
// # Keys left out, and the shadow's rate
//
// A key under an excluded prefix (Config.ExcludePrefixes, and
// kv.ReservedPrefix always: a bot's own bookkeeping, kvshadow's own keys)
// is written to the authoritative store alone: it never enters the settle
// set, so it is never copied, compared, verified, repaired or listed among
// the dirty or unsettled keys, the handover's comparison skips it, an ingested copy of it is dropped, and a
// journal from before the prefix was excluded drops it at New; each is
// counted (Stats.Excluded). Config.ShadowBudget caps the requests the
// Store's own work makes to the shadow: lanes wait for it (a copy whose
// wait outlives it is dropped as timed out, its key dirty), verification
// waits, repairs without room are deferred, all counted
// (Stats.ShadowPacing); a caller never waits on it. List returns the bot's
// excluded keys, which are its data, but never kvshadow's own.
//
// # Optional abilities
//
// A *Store is a kv.ExpiryGetter: GetEntry reads the authoritative store's
// GetEntry (errors.ErrUnsupported when it has none).
//
// It is a kv.MetadataStore: PutEntry writes a value with Workers KV
// metadata, which is copied with the value through the lanes and repairs,
// and compared with it (compare.MetadataMismatch). When either store keeps
// no metadata, an entry that carries some is refused with
// kv.ErrMetadataUnsupported, before any write.
//
// It is a kv.BulkGetter, kv.BulkPutter and kv.BulkDeleter. PutMany and
// DeleteMany make one call to the authoritative store's own bulk call (one
// call a key when it has none), then queue each key's copy on its lane
// while holding that key's lock, as a single write does; the locks of a
// bulk are taken in one fixed order, so two bulks never deadlock and the
// per-key order holds between bulks and single writes. A bulk write's
// copies that find their lane full wait in the lane's backlog (up to
// MaxBacklog copies over all lanes) instead of being dropped. While a lane
// has a backlog, other work for it joins the backlog (barriers: Flush, a
// flip) or is refused as from a full lane, and a newer write of a key whose
// copy waits there replaces that copy, so each key's order holds. A bulk
// call the authoritative store fails with an error of unknown outcome (a
// timeout after the store took the keys) leaves every key of it dirty, as
// a single write of unknown outcome does, for repair to copy what the store
// holds; with one call a key, the keys after the failed one never reached
// the store. GetMany reads the authoritative store in bulk; its sampled
// keys are compared as Get's are.
//
// Ingest takes tee mode's writes: writes the primary has already applied
// elsewhere (the bot's Worker, through its binding), each with its key,
// value or delete, absolute expiry, metadata and acknowledged-at time. While
// the primary is authoritative their copies are queued on the lanes to the
// shadow and their keys recorded as unsettled, so verification checks them
// against the primary; a write older than one already known for its key
// (its last write, while the key is in the settle set or its write among
// the 4,096 latest of the keys that settled, which are let go oldest
// first; else the latest write let go) is not applied over it, only
// verified, and one that never arrives is found by that verification or
// by a reconciliation. From live
// on they are late copies (see The handover).
//
// CompareReads takes tee mode's sampled reads: what the bot's Worker read
// from the primary, as a key, a SHA-256 digest and length of the value and
// the expiry, never the value. In the Shadow stage each is compared with
// the shadow in its key's lane, behind the key's pending copies, exactly as
// the Store's own sampled reads are: the shadow's value is reduced to its
// digest and length, a difference is only suspected until the verification
// read after the window confirms it, and a read made before a write of its
// key that the Store has seen since (by the write's acknowledged-at time,
// or by a write of its slot while the comparison was queued) is
// inconclusive. The Worker samples its reads itself, so CompareRate does
// not sample them again; a CompareRate of zero, which compares nothing,
// and the DualWrite stage leave them uncompared.
//
// # The handover
//
// The invariant: no key becomes authoritative in MongoDB unless MongoDB
// holds the last value Workers KV acknowledged for it, verified by the
// Store or written through it; and after the flip, no acknowledged write is
// dropped. In tee mode, from the moment MongoDB can become authoritative, no
// isolate serves a read from, or acknowledges a write to, its binding
// unless that write is known to the proxy before the flip (its copy, or the
// comparison below, which needs no copy); and an isolate that cannot learn
// the stage never guesses that Workers KV is still authoritative once it
// may not be. While Workers KV is authoritative, the bot keeps working with
// the proxy down.
//
// In tee mode (a positive FenceInterval) the Store is not the only writer:
// isolates write their binding and send copies afterwards, each on a stage
// answer whose lease the proxy sets (the answer's lease_ms; package
// service refuses a fence shorter than that lease and the longest
// invocation together). Before the Store enters Handover it writes
// StageKey ("__kvshadow:stage", value "handover" in every later stage) to
// the primary, the bot's own namespace, which a tee that cannot reach the
// proxy reads from its binding: it serves from the binding only while that
// key is absent and it has not seen the handover (the key is deleted on
// the way back to Shadow). The key is not assumed to stay: anyone with the
// bot's binding can delete or overwrite it. From Handover to Complete the
// repair loop reads it back (at once after New or the way into Handover,
// then every RepairInterval), and SetStage before a flip; a read that
// finds it missing or different counts it (Stats.StageKey), writes it
// again, and logs once until a read finds it as written. In Handover that
// rewrite also starts the handover's clock again (where "entered
// Handover" is said below, read "entered it or last rewrote StageKey"):
// the quiet interval, the credible window of copies and the full
// comparison, since an isolate cut off from the proxy may have served its
// binding while the key was gone, and that write is then compared before
// the flip. After the flip nothing can take such a write back: a fresh
// isolate (no module state) cut off from the proxy between a deletion and
// the rewrite, within a RepairInterval plus Workers KV's propagation,
// serves its binding; an isolate that saw the handover does not. The flip
// from Handover to Live (and the way back) is fenced; SetStage refuses it
// (ErrUnsynced, saying what holds it; Fence and Stats.Fence say so at any
// time) until
//
//   - from Handover, the Store has been in it for FenceInterval (see
//     DefaultFenceInterval): no isolate can still write its binding on a
//     stage read before. A copy does not restart the interval, so that no
//     client holds the flip by sending copies: one that arrives after it is
//     refused (below);
//   - from Handover, the full comparison has finished clean: FenceInterval
//     and two consistency windows after the Store entered Handover (an
//     isolate cut off from the proxy may read StageKey a window late, and
//     its last binding write is visible a window later), the Store lists
//     both stores and compares every key (excluded prefixes aside); each
//     key that differs is recorded as last written by a binding copy, so
//     that verification repairs MongoDB toward Workers KV, authoritative
//     until the flip, and the flip waits for it. A copy that never reached
//     the proxy is thus not erased by the flip; what the tee does to
//     deliver it late is best effort. FenceStatus.CompareFrom, Compared and
//     CompareDiffered say where it stands;
//   - every key whose last write came through Ingest (or whose origin is
//     unknown: loaded from the journal) was verified equal in both stores,
//     after the consistency window; a key last written through the Store
//     needs no wait, since the Store knows the value it wrote;
//   - from Handover, StageKey reads back from the primary as written
//     (Workers KV reads may lag a write by up to a minute: the hold says
//     so);
//   - the lanes are drained and no key is dirty, as for any flip.
//
// Package control adds the same conditions for every instance, from the
// heartbeats (a replica whose view of the stage lags enters Handover, and
// starts its own interval and comparison, later).
//
// The clocks. The Store trusts its own clock: when it wrote a key, when a
// copy arrived. A copy's acknowledged-at time is the client's; it is
// trusted only within IngestMaxAge before and IngestMaxLead after the
// copy's arrival, and never later than the arrival (no write was
// acknowledged after its copy was received), and it only orders copies:
// whether a copy is credible at all rests on its arrival alone. A copy
// outside those bounds is refused (Stats.IngestRefused), applies nothing,
// and its key is verified instead: a replayed copy cannot overwrite a newer
// write, nor one stamped in the future make the real copy be dropped as
// stale. Copies of one key are ordered by those bounded times against the
// last write of the key the Store knows, its own included.
//
// Forged copies. The clients' token can send any copy. No isolate writes
// its binding after the handover's fence interval, and the full
// comparison holds every binding write made before it in MongoDB; so a
// copy that arrives in Handover more than FenceInterval after the Store
// entered it is refused (RefusedAfterFence) and never reaches MongoDB, and
// one that arrives more than FenceInterval after MongoDB became
// authoritative (the Store's own flip, or Config.AuthoritativeSince) is
// refused (RefusedAckedAfterFlip), whatever time it claims. A refused copy
// is counted. In Handover it holds nothing; in Live its key is verified,
// so that Workers KV is brought level before a way back, which holds the
// way back until one verification pass after the last such copy. Within
// the interval a forged copy is taken as a real one: what it wrote to
// MongoDB is verified against Workers KV and repaired before the flip,
// which the full comparison holds until two windows after the interval
// anyway. A batch with copies refused or late copies not applied is logged
// once, with counts, never once a copy.
//
// Late copies. A copy that arrives from Live on, within that interval (a
// batch delayed past the fence, an isolate's copies kept for its next
// batch), is never dropped: it is counted (Stats.LateCopies) and its key
// stays in the settle set for verification (in complete, where Workers KV
// is no longer written, MongoDB alone decides). Its own time orders
// nothing: Workers KV, authoritative until the flip, does. When the key is
// outside the settle set and Workers KV holds exactly what the copy says
// while MongoDB does not, nothing written through the Store came after the
// copy there (such a write reaches Workers KV after MongoDB and holds its
// key in the set meanwhile): the copy is the last acknowledged write, and
// it is written to MongoDB and copied to Workers KV (LateApplied); a copy
// MongoDB fails to take is LateFailed, its key left for repair. Otherwise
// MongoDB's value stands and verification brings Workers KV level with
// it: LateHeld when MongoDB holds the copy already (the handover's
// comparison put it there, or the copy came twice), LateSuperseded when
// this Store wrote the key after it (beyond IngestMaxLead), else
// LateConflict, which another instance's newer write is: it reached
// Workers KV after MongoDB, so Workers KV no longer holds the copy.
//
// What each piece covers, and its test: the arrival bounds, forged and
// back-dated copies (TestABackDatedCopyAfterTheFlipIsRefused, here and in
// tests/proxy; TestAForgedCopyInHandoverDoesNotHoldTheFlip); Workers KV's
// evidence, for a copy delayed past the fence that MongoDB lacks, as from
// an instance cut off from MongoDB less than LiveFor before the flip
// (TestLateCopies, TestLateCopyThatWorkersKVStillHolds); another
// instance's newer write stands (tests/proxy's
// TestALateCopyNeverOverwritesAnotherInstancesWrite). The workload tests
// (tests/workers' corners, TestFlipUnderTrafficLosesNothing) lose nothing
// even with late copies never applied: the full comparison leaves MongoDB
// holding every binding write before the flip. So there are no conflict
// records, kept sides, decisions, or ordering by the copies' times or the
// other instances' heartbeats: no test could make one of them matter.
//
// # Lifecycle
//
// New loads the Journal, if any, and starts one worker per lane, a timeout
// watchdog, the verification and repair loop, an event loop and the
// journal's committer; Close stops them all. Close drains the lanes until
// its context ends, then cancels what is under way and counts what was
// left, queued or in flight (Stats.LeftAtClose), as dirty, and makes the
// journal's last commit. After Close every call fails with an error
// matching kv.ErrClosed.
//
// WaitSettled, for a test or an orderly shutdown, waits until every key
// written so far is settled (lanes drained, no key dirty or unsettled), or
// until its context ends, returning what is left (Left).
package dualwrite
