package report

import (
	"cmp"
	"maps"
	"math"
	"math/big"
	"slices"
	"time"

	"github.com/kvshadow/kvshadow/compare"
)

// The JSON schema of a Report. SchemaVersion changes only when a field
// changes meaning or disappears; new fields may be added within a version.
const (
	SchemaName    = "kvshadow.shadow-report"
	SchemaVersion = 1
)

// OtherModules is the module under which keys are counted once MaxModules
// modules have been seen. It is not a valid module name, so it cannot clash.
const OtherModules = "*"

// Report is the outcome of a run, as the renderers print it and JSON
// carries it (see the package documentation for the schema).
type Report struct {
	Schema        string    `json:"schema"`
	SchemaVersion int       `json:"schema_version"`
	RunID         string    `json:"run_id,omitempty"`
	StartedAt     time.Time `json:"started_at"`
	FinishedAt    time.Time `json:"finished_at"`
	Resumed       bool      `json:"resumed"`
	Primary       SideInfo  `json:"primary"`
	Shadow        SideInfo  `json:"shadow"`
	Scope         Scope     `json:"scope"`
	Options       Options   `json:"options"`
	Truth         Truth     `json:"truth"`
	// Totals and Modules count what the scan found, before any repair.
	Totals  Counts         `json:"totals"`
	Modules []ModuleCounts `json:"modules"`
	// Divergences lists the keys that did not match, in key order, up to
	// MaxRecords; DivergencesOmitted counts the rest.
	Divergences        []compare.Record `json:"divergences"`
	DivergencesOmitted int64            `json:"divergences_omitted"`
	// BinaryInShadow and TooLargeForBot list, up to MaxRecords, the keys
	// the bot cannot read as the Go layer does ("Values that are not
	// text" in the package doc).
	BinaryInShadow  []compare.Record `json:"binary_in_shadow,omitempty"`
	BinaryOmitted   int64            `json:"binary_omitted,omitempty"`
	TooLargeForBot  []compare.Record `json:"too_large_for_bot,omitempty"`
	TooLargeOmitted int64            `json:"too_large_omitted,omitempty"`
	Repair          *RepairReport    `json:"repair,omitempty"`
	// Settle and LeftForLater: see "Reading again what differs".
	Settle       *SettleReport `json:"settle,omitempty"`
	LeftForLater []LeftKey     `json:"left_for_later,omitempty"`
	// Parity is what the gate compares with MinParity: the scan's parity,
	// or the parity after an applied repair.
	Parity float64 `json:"parity"`
	Passed bool    `json:"passed"`
}

// SideInfo describes one store's part in the run.
type SideInfo struct {
	Name     string   `json:"name"`
	Budget   string   `json:"budget"` // "1200/5m0s" or "unlimited"
	Requests Requests `json:"requests"`
	Expiries bool     `json:"expiries"` // the store's reads carried expiries
}

// Options records how the run compared.
type Options struct {
	TTLToleranceSeconds float64           `json:"ttl_tolerance_seconds"`
	KeyPolicy           compare.KeyPolicy `json:"key_policy"`
	ExpiriesCompared    bool              `json:"expiries_compared"`
	MinParity           float64           `json:"min_parity"`
	// StableHashes reports that hashed keys were keyed by a configured
	// secret (the proxy's key secret), so that a key hashes the same in
	// every run and in the proxy's answers.
	StableHashes bool `json:"stable_hashes"`
}

// KindCounts counts keys per divergence kind; every kind is present.
type KindCounts map[compare.Kind]int64

func newKindCounts() KindCounts {
	k := make(KindCounts, len(compare.Kinds))
	for _, kind := range compare.Kinds {
		k[kind] = 0
	}
	return k
}

// add adds o into k, made first when nil (a checkpoint's may be), and
// returns k.
func (k KindCounts) add(o KindCounts) KindCounts {
	if k == nil {
		k = newKindCounts()
	}
	for kind, n := range o {
		k[kind] += n
	}
	return k
}

// Counts are the numbers of one module, or of all.
type Counts struct {
	// PrimaryKeys and ShadowKeys are the keys listed in scope on each side
	// (sampling does not reduce them).
	PrimaryKeys int64 `json:"primary_keys"`
	ShadowKeys  int64 `json:"shadow_keys"`
	// Compared is the keys classified: the union of both sides, sampled.
	Compared  int64      `json:"compared"`
	Kinds     KindCounts `json:"kinds"`
	Divergent int64      `json:"divergent"`
	// BinaryInShadow and TooLargeForBot are call-outs beside parity (see
	// Report.BinaryInShadow): the keys keep their kind.
	BinaryInShadow int64 `json:"binary_in_shadow"`
	TooLargeForBot int64 `json:"too_large_for_bot"`
	// Excluded is the keys listed in the scanned ranges but left out (see
	// Scope); counted in Totals alone.
	Excluded int64 `json:"excluded,omitempty"`
	// Parity (see the package doc) is 100 when no key was compared.
	Parity float64 `json:"parity"`
}

// ModuleCounts are the Counts of one module. Module is "" for keys outside
// any module and OtherModules past the module cap.
type ModuleCounts struct {
	Module string `json:"module"`
	Counts
}

// RepairReport says what a repair did, or would do in a dry run.
type RepairReport struct {
	Applied       bool `json:"applied"`
	Authoritative Role `json:"authoritative"`
	RepairCounts
	ParityAfter float64 `json:"parity_after"`
}

// RepairCounts count a repair; a run adds up those of its batches, and the
// checkpoint keeps them.
type RepairCounts struct {
	// Puts and Deletes count the writes to the other side, made or
	// planned; Expiring counts keys whose authoritative copy expires
	// within kv.MinTTL: their other copy is deleted instead (counted in
	// Deletes) and not re-checked.
	Puts     int64 `json:"puts"`
	Deletes  int64 `json:"deletes"`
	Expiring int64 `json:"expiring"`
	Failed   int64 `json:"failed"`
	// Rechecked keys were read again from both sides after an applied
	// repair; After counts their kinds: Verified agree, Pending were
	// written into the primary and may still be read stale, Remaining
	// differ still.
	Rechecked int64      `json:"rechecked"`
	Verified  int64      `json:"verified"`
	Pending   int64      `json:"pending"`
	Remaining int64      `json:"remaining"`
	After     KindCounts `json:"after"`
}

// agrees reports whether a kind counts for parity.
func agrees(k compare.Kind) bool { return k == compare.Match || k == compare.ExpiredOnOneSide }

func (c *Counts) add(o *Counts) {
	c.PrimaryKeys += o.PrimaryKeys
	c.ShadowKeys += o.ShadowKeys
	c.Compared += o.Compared
	c.BinaryInShadow += o.BinaryInShadow
	c.TooLargeForBot += o.TooLargeForBot
	c.Kinds = c.Kinds.add(o.Kinds)
}

func (c *Counts) agreeing() int64 {
	var n int64
	for k, v := range c.Kinds {
		if agrees(k) {
			n += v
		}
	}
	return n
}

// finish fills the derived fields.
func (c *Counts) finish() {
	if c.Kinds == nil {
		c.Kinds = newKindCounts()
	}
	c.Divergent = 0
	for k, v := range c.Kinds {
		if k.Divergent() {
			c.Divergent += v
		}
	}
	c.Parity = parity(c.agreeing(), c.Compared)
}

// parity is agree/compared in percent, rounded down to 4 decimals so that
// 99.99999% never prints as 100%.
func parity(agree, compared int64) float64 {
	if compared == 0 {
		return 100
	}
	if agree >= compared {
		return 100
	}
	return math.Floor(float64(agree)*100*10000/float64(compared)) / 10000
}

// passes compares exactly, not through the rounded percentage: the minimum
// is taken in units of 0.0001% and compared in integers, so that 99.9% of
// 1,000 keys is 999 keys, whatever the float64 of 99.9.
func passes(agree, compared int64, min float64) bool {
	if compared == 0 {
		return true
	}
	units := big.NewInt(int64(math.Round(min * 10000)))
	lhs := new(big.Int).Mul(big.NewInt(agree), big.NewInt(100*10000))
	return lhs.Cmp(units.Mul(units, big.NewInt(compared))) >= 0
}

// sortedModules returns the module counts in module order.
func sortedModules(m map[string]*Counts) []ModuleCounts {
	out := make([]ModuleCounts, 0, len(m))
	for name, c := range m {
		cc := *c
		cc.Kinds = maps.Clone(c.Kinds)
		cc.finish()
		out = append(out, ModuleCounts{Module: name, Counts: cc})
	}
	slices.SortFunc(out, func(a, b ModuleCounts) int { return cmp.Compare(a.Module, b.Module) })
	return out
}
