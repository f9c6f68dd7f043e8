package dualwrite

import (
	"sync/atomic"
	"time"

	"github.com/kvshadow/kvshadow/compare"
)

// Stats is a snapshot of the Store's state and counters. Counters are
// cumulative since New. Its JSON names are the admin API's (GET /stats),
// which says the fence, the breakers and the confirmed divergences in its
// own terms (service/admin.StoreStats).
type Stats struct {
	Stage Stage `json:"stage"`
	// Queued is the number of asynchronous operations queued or running;
	// QueuedBytes the bytes of values they hold; MaxLaneDepth the fullest
	// lane's queue.
	Queued       int64 `json:"queued"`
	QueuedBytes  int64 `json:"queued_bytes"`
	MaxLaneDepth int   `json:"max_lane_depth"`
	// Lanes is the number of lanes and LaneCapacity the operations each
	// holds before it drops (Config.LaneDepth), so that MaxLaneDepth can be
	// read as a share of LaneCapacity.
	Lanes        int `json:"lanes"`
	LaneCapacity int `json:"lane_capacity"`
	// Drops counts the writes that did not reach the other store, by
	// reason; each left its key dirty.
	Drops map[DropReason]uint64 `json:"drops"`
	// Coalesced counts the writes whose copy replaced a copy of the same
	// key still waiting in its lane.
	Coalesced uint64 `json:"coalesced"`
	// Dirty is the number of dirty keys and Unsettled of unsettled ones:
	// the settle set holds both. DirtyOverflow counts the marks refused
	// because the set was full. ReconciliationNeeded is raised by the
	// first overflow, until AcknowledgeReconciliationAt.
	Dirty                int    `json:"dirty"`
	Unsettled            int    `json:"unsettled"`
	DirtyOverflow        uint64 `json:"dirty_overflow"`
	ReconciliationNeeded bool   `json:"reconciliation_needed"`
	// Suspects is the number of keys only a sampled read found different (see
	// The settle set); SuspectOverflow the suspicions dropped beyond MaxSuspects.
	Suspects        int    `json:"suspects"`
	SuspectOverflow uint64 `json:"suspect_overflow"`
	// SuspectsSuperseded counts the suspects a write through the Store
	// took into the settle set before a verification read confirmed or
	// cleared them: the key waits for the verification of that write.
	SuspectsSuperseded uint64                   `json:"suspects_superseded"`
	Repairs            map[RepairOutcome]uint64 `json:"repairs"`
	// DeletesHeld counts the keys whose repair, a delete, is held until an
	// operator allows it (AllowDeletes).
	DeletesHeld int `json:"deletes_held"`
	// Comparisons counts classified sampled comparisons by kind (a
	// difference is Suspected); ComparisonsSkipped those not made (lane
	// full, breaker open, closing).
	Comparisons        map[compare.Kind]uint64 `json:"comparisons"`
	ComparisonsSkipped uint64                  `json:"comparisons_skipped"`
	// Verifications counts verification reads by kind: Match settled the
	// key, Suspected was a first difference, a divergent kind a confirmed
	// one. Confirmed counts the confirmed divergences (reported to the
	// Sink), Cleared the suspicions a later read cleared.
	Verifications map[compare.Kind]uint64 `json:"verifications"`
	Confirmed     uint64                  `json:"-"`
	Cleared       uint64                  `json:"cleared"`
	// Held is the number of differences waiting for the confirmation rule.
	// ReportedElsewhere counts the differences another instance had reported
	// already (Fleet.Claim), ClaimErrors the claims that failed, reported
	// anyway, Recovered the journal's keys found different (see The settle
	// set). None of these is in Confirmed.
	Held              int    `json:"held"`
	ReportedElsewhere uint64 `json:"reported_elsewhere"`
	ClaimErrors       uint64 `json:"claim_errors"`
	Recovered         uint64 `json:"recovered"`
	// Journal: whether a journal is configured, whether its last commit
	// succeeded, its commits, its errors (failed commits, and marks its
	// Recorder refused, which wait for the next commit), the changes
	// waiting for the next commit, and the keys loaded from it by New.
	Journal        bool   `json:"journal"`
	JournalOK      bool   `json:"journal_ok"`
	JournalCommits uint64 `json:"journal_commits"`
	JournalErrors  uint64 `json:"journal_errors"`
	JournalPending int    `json:"journal_pending"`
	Loaded         uint64 `json:"loaded"`
	// IngestStale counts ingested writes older than one already known for
	// their key, not applied.
	IngestStale uint64 `json:"ingest_stale"`
	// IngestRefused counts the ingested writes not trusted, by refusal;
	// LateCopies the ingested writes that arrived while MongoDB was
	// authoritative, by outcome.
	IngestRefused map[IngestRefusal]uint64 `json:"ingest_refused"`
	LateCopies    map[LateOutcome]uint64   `json:"late_copies"`
	// Fence is what holds the flip between handover and live back
	// (Store.Fence), in those two stages.
	Fence FenceStatus `json:"-"`
	// StageKey is what the last read of StageKey in the primary found, in
	// tee mode from Handover on, and how often it was written again.
	StageKey StageKeyStatus `json:"stage_key"`
	// TeeReads counts the reads made elsewhere that CompareReads took for
	// comparison; their outcomes are counted in Comparisons (or
	// ComparisonsSkipped) with the Store's own.
	TeeReads uint64 `json:"tee_reads"`
	// Breaker is the state of the breaker guarding the store that is not
	// authoritative in this stage; Breakers has both.
	Breaker  BreakerState          `json:"breaker"`
	Breakers map[Role]BreakerState `json:"-"`
	// ShadowPacing counts what the shadow's budget (Config.ShadowBudget)
	// held back.
	ShadowPacing ShadowPacing `json:"shadow_pacing"`
	// Excluded counts what was left out for its key's prefix
	// (Config.ExcludePrefixes).
	Excluded Excluded `json:"excluded"`
	// LeftAtClose counts the operations Close abandoned.
	LeftAtClose uint64 `json:"left_at_close"`
	// LostEvents counts breaker events not delivered to the Observer
	// because its goroutine fell 64 events behind.
	LostEvents uint64 `json:"lost_events"`
}

// Divergences is the number of confirmed divergences: verification reads
// whose kind is a divergence.
func (st Stats) Divergences() uint64 {
	var n uint64
	for k, c := range st.Verifications {
		if k.Divergent() {
			n += c
		}
	}
	return n
}

// indexOf maps each of a list's values to its place, the index of its
// counter.
func indexOf[T comparable](all []T) map[T]int {
	m := make(map[T]int, len(all))
	for i, v := range all {
		m[v] = i
	}
	return m
}

// maxKinds bounds the number of comparison kinds counted.
const maxKinds = 16

var (
	kindIndex    = indexOf(compare.Kinds[:min(len(compare.Kinds), maxKinds)])
	dropIndex    = indexOf(DropReasons[:])
	repairIndex  = indexOf(RepairOutcomes[:])
	lateIndex    = indexOf(LateOutcomes[:])
	refusalIndex = indexOf(IngestRefusals[:])
)

type counters struct {
	queued             atomic.Int64
	queuedBytes        atomic.Int64
	backlog            atomic.Int64 // jobs in the lanes' backlogs
	drops              [len(DropReasons)]atomic.Uint64
	repairs            [len(RepairOutcomes)]atomic.Uint64
	kinds              [maxKinds]atomic.Uint64
	verifications      [maxKinds]atomic.Uint64
	comparisonsSkipped atomic.Uint64
	leftAtClose        atomic.Uint64
	lostEvents         atomic.Uint64
	coalesced          atomic.Uint64
	confirmed          atomic.Uint64
	cleared            atomic.Uint64
	elsewhere          atomic.Uint64
	claimErrors        atomic.Uint64
	journalCommits     atomic.Uint64
	journalErrors      atomic.Uint64
	loaded             atomic.Uint64
	ingestStale        atomic.Uint64
	teeReads           atomic.Uint64
	late               [len(LateOutcomes)]atomic.Uint64
	refused            [len(IngestRefusals)]atomic.Uint64
	excluded           struct{ writes, copies, reads, journal atomic.Uint64 }
	paceDelayed        atomic.Uint64
	paceWaited         atomic.Int64 // nanoseconds
	paceDeferred       atomic.Uint64
}

func (c *counters) drop(r DropReason)       { c.drops[dropIndex[r]].Add(1) }
func (c *counters) repair(o RepairOutcome)  { c.repairs[repairIndex[o]].Add(1) }
func (c *counters) compared(k compare.Kind) { c.kinds[kindIndex[k]].Add(1) }
func (c *counters) verified(k compare.Kind) { c.verifications[kindIndex[k]].Add(1) }

// Stats returns a snapshot.
func (s *Store) Stats() Stats {
	now := s.clock.Now()
	st := Stats{
		Stage:              s.Stage(),
		Queued:             s.ctr.queued.Load(),
		QueuedBytes:        s.ctr.queuedBytes.Load(),
		Lanes:              len(s.lanes),
		LaneCapacity:       s.cfg.LaneDepth,
		Drops:              make(map[DropReason]uint64, len(DropReasons)),
		Repairs:            make(map[RepairOutcome]uint64, len(RepairOutcomes)),
		Comparisons:        make(map[compare.Kind]uint64, len(kindIndex)),
		ComparisonsSkipped: s.ctr.comparisonsSkipped.Load(),
		Verifications:      make(map[compare.Kind]uint64, len(kindIndex)),
		Coalesced:          s.ctr.coalesced.Load(),
		Confirmed:          s.ctr.confirmed.Load(),
		Cleared:            s.ctr.cleared.Load(),
		ReportedElsewhere:  s.ctr.elsewhere.Load(),
		ClaimErrors:        s.ctr.claimErrors.Load(),
		Journal:            s.journal != nil,
		JournalOK:          s.journal != nil && s.journalOK.Load(),
		JournalCommits:     s.ctr.journalCommits.Load(),
		JournalErrors:      s.ctr.journalErrors.Load(),
		Loaded:             s.ctr.loaded.Load(),
		IngestStale:        s.ctr.ingestStale.Load(),
		TeeReads:           s.ctr.teeReads.Load(),
		Breakers:           make(map[Role]BreakerState, 2),
		LeftAtClose:        s.ctr.leftAtClose.Load(),
		LostEvents:         s.ctr.lostEvents.Load(),
		DeletesHeld:        s.dels.heldKeys(),
	}
	for _, l := range s.lanes {
		st.MaxLaneDepth = max(st.MaxLaneDepth, len(l.ch))
	}
	for r, i := range dropIndex {
		st.Drops[r] = s.ctr.drops[i].Load()
	}
	for o, i := range repairIndex {
		st.Repairs[o] = s.ctr.repairs[i].Load()
	}
	for k, i := range kindIndex {
		st.Comparisons[k] = s.ctr.kinds[i].Load()
		st.Verifications[k] = s.ctr.verifications[i].Load()
	}
	s.set.counts(&st)
	for r, b := range s.breakers {
		st.Breakers[Role(r)] = b.state(now)
	}
	st.IngestRefused = make(map[IngestRefusal]uint64, len(IngestRefusals))
	for r, i := range refusalIndex {
		st.IngestRefused[r] = s.ctr.refused[i].Load()
	}
	st.LateCopies = make(map[LateOutcome]uint64, len(LateOutcomes))
	for o, i := range lateIndex {
		st.LateCopies[o] = s.ctr.late[i].Load()
	}
	st.ShadowPacing = ShadowPacing{Delayed: s.ctr.paceDelayed.Load(), Waited: time.Duration(s.ctr.paceWaited.Load()), Deferred: s.ctr.paceDeferred.Load()}
	x := &s.ctr.excluded
	st.Excluded = Excluded{Writes: x.writes.Load(), Copies: x.copies.Load(), Reads: x.reads.Load(), Journal: x.journal.Load()}
	st.Fence, st.StageKey = s.fenceAt(st.Stage, now), s.key.status()
	st.Breaker = BreakerClosed
	if st.Stage.mirrors() {
		st.Breaker = st.Breakers[st.Stage.authority().other()]
	}
	return st
}
