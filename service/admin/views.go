package admin

import (
	"maps"
	"slices"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// The JSON the API answers with; field names are part of the API, and
// Client decodes into these types.

// StatusView is an instance as it sees itself (GET /stage, "self").
type StatusView struct {
	Instance   string     `json:"instance"`
	Stage      string     `json:"stage"`
	Generation uint64     `json:"generation"`
	InSync     bool       `json:"in_sync"`
	Lag        string     `json:"lag,omitempty"`
	Draining   bool       `json:"draining"`
	BoardError string     `json:"board_error,omitempty"`
	Polled     *time.Time `json:"polled_at,omitempty"`
	// PeersUntil is until when another instance may have written.
	PeersUntil *time.Time   `json:"peers_until,omitempty"`
	Document   DocumentView `json:"document"`
}

// DocumentView is the stage document.
type DocumentView struct {
	Stage      string     `json:"stage"`
	Generation uint64     `json:"generation"`
	UpdatedAt  *time.Time `json:"updated_at,omitempty"`
	UpdatedBy  string     `json:"updated_by,omitempty"`
}

// InstanceView is an instance's heartbeat (GET /stage, "instances").
type InstanceView struct {
	Instance   string    `json:"instance"`
	Stage      string    `json:"stage"`
	Generation uint64    `json:"generation"`
	At         time.Time `json:"at"`
	AgeSeconds float64   `json:"age_seconds"`
	// Alive is the heartbeat's freshness, not a stage: the instance beat
	// within the liveness window and has not stopped.
	Alive                bool   `json:"alive"`
	Drained              bool   `json:"drained"`
	Clean                bool   `json:"clean"`
	Settled              bool   `json:"settled"`
	Dirty                int    `json:"dirty"`
	Unsettled            int    `json:"unsettled"`
	ReconciliationNeeded bool   `json:"reconciliation_needed"`
	Draining             bool   `json:"draining"`
	Stopped              bool   `json:"stopped"`
	Lag                  string `json:"lag,omitempty"`
	// The instance's handover fence, as its heartbeat says.
	QuietUntil            *time.Time `json:"quiet_until,omitempty"`
	IngestUnverified      int        `json:"ingest_unverified"`
	FenceRemainingSeconds float64    `json:"fence_remaining_seconds"`
}

// StageView answers GET /stage.
type StageView struct {
	Self      StatusView     `json:"self"`
	Instances []InstanceView `json:"instances"`
	// Flip is present in handover and live.
	Flip *FlipView `json:"flip,omitempty"`
	// StageKey is, per namespace ID, as StoreStats.StageKey.
	StageKey map[string]dualwrite.StageKeyStatus `json:"stage_key,omitempty"`
}

// ChangeView answers PUT /stage.
type ChangeView struct {
	Stage      string `json:"stage"`
	Generation uint64 `json:"generation"`
	Changed    bool   `json:"changed"`
	Applied    bool   `json:"applied"`
	Lag        string `json:"lag,omitempty"`
}

// StoreStats is a dual-write store's Stats (GET /stats; docs/admin-api.md
// says what each field counts): dualwrite.Stats's own JSON, with the stage,
// the breakers and the counts' keys as strings, the confirmed divergences
// and the fence as FenceView.
type StoreStats struct {
	dualwrite.Stats
	Stage         string            `json:"stage"`
	Drops         map[string]uint64 `json:"drops"`
	Repairs       map[string]uint64 `json:"repairs"`
	Comparisons   map[string]uint64 `json:"comparisons"`
	Verifications map[string]uint64 `json:"verifications"`
	Divergences   uint64            `json:"divergences"` // confirmed by verification
	IngestRefused map[string]uint64 `json:"ingest_refused"`
	LateCopies    map[string]uint64 `json:"late_copies"`
	Fence         FenceView         `json:"fence"`
	Breakers      map[string]string `json:"breakers"`
}

// FenceView is what holds the flip between handover and live back on this
// instance (GET /stats, per namespace) or across the fleet (GET /stage).
type FenceView struct {
	Clear            bool       `json:"clear"`
	RemainingSeconds float64    `json:"remaining_seconds"`
	HeldBy           []string   `json:"held_by,omitempty"`
	LastBindingCopy  *time.Time `json:"last_binding_copy,omitempty"`
	QuietUntil       *time.Time `json:"quiet_until,omitempty"`
	IngestUnverified int        `json:"ingest_unverified"`
	// In handover: the full comparison with Workers KV
	// (dualwrite.FenceStatus).
	CompareFrom     *time.Time `json:"compare_from,omitempty"`
	ComparePending  bool       `json:"compare_pending"`
	CompareDiffered int        `json:"compare_differed"`
}

// FlipView answers GET /stage's "flip": in handover and live, what holds
// the flip to the other side back across the fleet.
type FlipView struct {
	From             string   `json:"from"`
	To               string   `json:"to"`
	Clear            bool     `json:"clear"`
	RemainingSeconds float64  `json:"remaining_seconds"`
	HeldBy           []string `json:"held_by,omitempty"`
}

func fenceOf(f dualwrite.FenceStatus) FenceView {
	return FenceView{Clear: f.Clear(), RemainingSeconds: seconds(f.Remaining), HeldBy: f.HeldBy,
		LastBindingCopy: timePtr(f.LastBindingCopy), QuietUntil: timePtr(f.QuietUntil), IngestUnverified: f.IngestUnverified,
		CompareFrom: timePtr(f.CompareFrom), ComparePending: !f.CompareFrom.IsZero() && !f.Compared, CompareDiffered: f.CompareDiffered}
}

// Operations are the Workers KV API requests the front answered and, of
// them, the errors (500 and above).
type Operations struct {
	Operations uint64 `json:"operations"`
	Errors     uint64 `json:"errors"`
}

// DivergenceSummary counts the divergences found: Confirmed (reported by
// this instance, see dualwrite's Confirmation), Suspected (held now; most
// go away), SuspectedTotal (seen first), Recovered (named by the journal
// after a restart and found different, repaired without a report); all but
// Suspected are running totals.
type DivergenceSummary struct {
	Confirmed      uint64 `json:"confirmed"`
	Suspected      uint64 `json:"suspected"`
	SuspectedTotal uint64 `json:"suspected_total"`
	Recovered      uint64 `json:"recovered"`
}

// SummaryView opens GET /stats: the few numbers an operator reads first,
// for the instance as a whole (every namespace summed).
type SummaryView struct {
	Instance   string `json:"instance"`
	Stage      string `json:"stage"`
	Generation uint64 `json:"generation"`
	// Operations and Errors: see Operations.
	Operations  uint64            `json:"operations"`
	Errors      uint64            `json:"errors"`
	Breaker     string            `json:"breaker"`
	Dirty       int               `json:"dirty"`
	Unsettled   int               `json:"unsettled"`
	Divergences DivergenceSummary `json:"divergences"`
	// LateCopies are the tee's copies that arrived while MongoDB was
	// authoritative (every outcome); Conflicts those whose order could not
	// be known, where MongoDB's value stood.
	LateCopies           uint64 `json:"late_copies"`
	Conflicts            uint64 `json:"conflicts"`
	ReconciliationNeeded bool   `json:"reconciliation_needed"`
}

// StatsView answers GET /stats: the summary first, then the counters summed
// over the namespaces and per namespace.
type StatsView struct {
	Summary    SummaryView           `json:"summary"`
	Instance   string                `json:"instance"`
	Generation uint64                `json:"generation"`
	Total      StoreStats            `json:"total"`
	Namespaces map[string]StoreStats `json:"namespaces"`
	// Reconciliation is each namespace's last settle-set overflow.
	Reconciliation map[string]ReconciliationView `json:"reconciliation,omitempty"`
}

// DirtyList is one namespace's dirty keys.
type DirtyList struct {
	Count     int      `json:"count"`
	Keys      []string `json:"keys"`
	Truncated bool     `json:"truncated"`
}

// DirtyView answers GET /dirty.
type DirtyView struct {
	Keys       string               `json:"keys"` // "hmac" or "plain"
	Namespaces map[string]DirtyList `json:"namespaces"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func statusOf(s control.Status) StatusView {
	return StatusView{
		Instance: s.Instance, Stage: s.Stage.String(), Generation: s.Generation, InSync: s.InSync(), Lag: s.Lag,
		Draining: s.Draining, BoardError: s.BoardErr, Polled: timePtr(s.Polled), PeersUntil: timePtr(s.PeersUntil),
		Document: DocumentView{Stage: s.Document.Stage.String(), Generation: s.Document.Generation,
			UpdatedAt: timePtr(s.Document.UpdatedAt), UpdatedBy: s.Document.UpdatedBy},
	}
}

func instanceOf(v control.InstanceView) InstanceView {
	return InstanceView{
		Instance: v.Instance, Stage: v.Stage.String(), Generation: v.Generation, At: v.At, AgeSeconds: seconds(v.Age),
		Alive: v.Live, Drained: v.Drained, Clean: v.Clean(), Settled: v.Settled(), Dirty: v.Dirty, Unsettled: v.Unsettled,
		ReconciliationNeeded: v.ReconciliationNeeded, Draining: v.Draining, Stopped: v.Stopped, Lag: v.Lag,
		QuietUntil: timePtr(v.QuietUntil), IngestUnverified: v.IngestUnverified, FenceRemainingSeconds: seconds(v.FenceRemaining),
	}
}

func counts[K ~string](m map[K]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[string(k)] = v
	}
	return out
}

func summaryOf(st control.Status, total dualwrite.Stats, ops Operations) SummaryView {
	return SummaryView{
		Instance: st.Instance, Stage: st.Stage.String(), Generation: st.Generation, Operations: ops.Operations, Errors: ops.Errors,
		Breaker: string(total.Breaker), Dirty: total.Dirty, Unsettled: total.Unsettled,
		Divergences: DivergenceSummary{
			Confirmed:      total.Divergences(),
			Suspected:      uint64(total.Held),
			SuspectedTotal: total.Comparisons[compare.Suspected] + total.Verifications[compare.Suspected],
			Recovered:      total.Recovered,
		},
		LateCopies: sumCounts(total.LateCopies), Conflicts: total.LateCopies[dualwrite.LateConflict],
		ReconciliationNeeded: total.ReconciliationNeeded,
	}
}

func sumCounts[K comparable](m map[K]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

func statsOf(s dualwrite.Stats) StoreStats {
	breakers := map[string]string{}
	for r, b := range s.Breakers {
		breakers[r.String()] = string(b)
	}
	return StoreStats{Stats: s, Stage: s.Stage.String(), Drops: counts(s.Drops), Repairs: counts(s.Repairs), Comparisons: counts(s.Comparisons),
		Verifications: counts(s.Verifications), Divergences: s.Divergences(), IngestRefused: counts(s.IngestRefused), LateCopies: counts(s.LateCopies),
		Fence: fenceOf(s.Fence), Breakers: breakers}
}

// Sum adds up the snapshots of several stores: counts add up, the fullest
// lane and the worst breaker win, the stage is the first's.
func Sum(all ...dualwrite.Stats) dualwrite.Stats {
	var sum dualwrite.Stats
	for i, st := range all {
		if i == 0 {
			// The counts add into copies: the caller's snapshots stay as they were.
			sum = st
			sum.Drops, sum.Repairs = maps.Clone(st.Drops), maps.Clone(st.Repairs)
			sum.Comparisons, sum.Verifications = maps.Clone(st.Comparisons), maps.Clone(st.Verifications)
			sum.Breakers = maps.Clone(st.Breakers)
			sum.IngestRefused, sum.LateCopies = maps.Clone(st.IngestRefused), maps.Clone(st.LateCopies)
			sum.Fence.HeldBy = slices.Clone(st.Fence.HeldBy)
			continue
		}
		sum.Queued += st.Queued
		sum.QueuedBytes += st.QueuedBytes
		sum.MaxLaneDepth = max(sum.MaxLaneDepth, st.MaxLaneDepth)
		sum.Lanes += st.Lanes
		sum.Coalesced += st.Coalesced
		sum.Dirty += st.Dirty
		sum.DeletesHeld += st.DeletesHeld
		sum.Unsettled += st.Unsettled
		sum.DirtyOverflow += st.DirtyOverflow
		sum.ReconciliationNeeded = sum.ReconciliationNeeded || st.ReconciliationNeeded
		sum.Suspects += st.Suspects
		sum.SuspectOverflow += st.SuspectOverflow
		sum.SuspectsSuperseded += st.SuspectsSuperseded
		sum.ComparisonsSkipped += st.ComparisonsSkipped
		sum.LeftAtClose += st.LeftAtClose
		sum.LostEvents += st.LostEvents
		addCounts(sum.Drops, st.Drops)
		addCounts(sum.Repairs, st.Repairs)
		addCounts(sum.Comparisons, st.Comparisons)
		addCounts(sum.Verifications, st.Verifications)
		sum.Confirmed += st.Confirmed
		sum.Cleared += st.Cleared
		sum.Held += st.Held
		sum.ReportedElsewhere += st.ReportedElsewhere
		sum.ClaimErrors += st.ClaimErrors
		sum.Recovered += st.Recovered
		sum.Journal = sum.Journal || st.Journal
		sum.JournalOK = sum.JournalOK && (st.JournalOK || !st.Journal)
		sum.JournalCommits += st.JournalCommits
		sum.JournalErrors += st.JournalErrors
		sum.JournalPending += st.JournalPending
		sum.Loaded += st.Loaded
		sum.IngestStale += st.IngestStale
		sum.TeeReads += st.TeeReads
		sum.Excluded = dualwrite.Excluded{Writes: sum.Excluded.Writes + st.Excluded.Writes, Copies: sum.Excluded.Copies + st.Excluded.Copies,
			Reads: sum.Excluded.Reads + st.Excluded.Reads, Journal: sum.Excluded.Journal + st.Excluded.Journal}
		sum.ShadowPacing = dualwrite.ShadowPacing{Delayed: sum.ShadowPacing.Delayed + st.ShadowPacing.Delayed,
			Waited: sum.ShadowPacing.Waited + st.ShadowPacing.Waited, Deferred: sum.ShadowPacing.Deferred + st.ShadowPacing.Deferred}
		addCounts(sum.IngestRefused, st.IngestRefused)
		addCounts(sum.LateCopies, st.LateCopies)
		sum.Fence = addFence(sum.Fence, st.Fence)
		if st.StageKey.Holds() || sum.StageKey.Found == "" {
			sum.StageKey.Found = st.StageKey.Found
		}
		sum.StageKey.Rewrites += st.StageKey.Rewrites
		for r, b := range st.Breakers {
			sum.Breakers[r] = worse(sum.Breakers[r], b)
		}
		sum.Breaker = worse(sum.Breaker, st.Breaker)
	}
	return sum
}

// addFence joins two stores' fences: the later quiet end and copy, the
// longer wait, every reason.
func addFence(a, b dualwrite.FenceStatus) dualwrite.FenceStatus {
	if b.LastBindingCopy.After(a.LastBindingCopy) {
		a.LastBindingCopy = b.LastBindingCopy
	}
	if b.QuietUntil.After(a.QuietUntil) {
		a.QuietUntil = b.QuietUntil
	}
	a.IngestUnverified += b.IngestUnverified
	// Clean across the namespaces only when each one's is.
	pending := !a.CompareFrom.IsZero() && !a.Compared || !b.CompareFrom.IsZero() && !b.Compared
	if b.CompareFrom.After(a.CompareFrom) {
		a.CompareFrom = b.CompareFrom
	}
	a.Compared = !pending
	a.CompareDiffered += b.CompareDiffered
	a.Dirty += b.Dirty
	a.ReconciliationNeeded = a.ReconciliationNeeded || b.ReconciliationNeeded
	a.Remaining = max(a.Remaining, b.Remaining)
	a.HeldBy = append(a.HeldBy, b.HeldBy...)
	return a
}

func addCounts[K comparable](dst, src map[K]uint64) {
	for k, v := range src {
		dst[k] += v
	}
}

var breakerRank = map[dualwrite.BreakerState]int{dualwrite.BreakerClosed: 0, dualwrite.BreakerHalfOpen: 1, dualwrite.BreakerOpen: 2}

func worse(a, b dualwrite.BreakerState) dualwrite.BreakerState {
	if breakerRank[b] > breakerRank[a] {
		return b
	}
	return a
}
