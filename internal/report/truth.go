package report

import (
	"cmp"
	"fmt"

	"github.com/kvshadow/kvshadow/compare"
)

// TruthSource says where a run's choice of the authoritative store came
// from.
type TruthSource string

// The sources of the truth.
const (
	// TruthStage: the stage document (package control) says which store is
	// authoritative, and the caller asked for nothing else.
	TruthStage TruthSource = "stage"
	// TruthForced: the caller chose the store against the stage document.
	TruthForced TruthSource = "forced"
	// TruthFlag: the caller chose the store, and no stage document could
	// say otherwise.
	TruthFlag TruthSource = "flag"
	// TruthDefault: nobody chose; the primary, as before any migration.
	TruthDefault TruthSource = "default"
)

// Truth is which store a run took as the truth (what a repair copies
// from), and why. Config.Truth fills it but for Side, which is always
// Repair.Authoritative.
type Truth struct {
	Side   Role        `json:"side"`
	Store  string      `json:"store"`
	Source TruthSource `json:"source"`
	// Stage and Generation are the stage document's, when it was read.
	Stage      string `json:"stage,omitempty"`
	Generation uint64 `json:"generation,omitempty"`
	// Reason says it in a sentence, for the reader of the report.
	Reason string `json:"reason"`
}

// truth completes the configured Truth with the side and its store.
func (e *engine) truth() Truth {
	t := e.cfg.Truth
	t.Side = e.cfg.Repair.Authoritative
	t.Store = e.primary.name
	if t.Side == Shadow {
		t.Store = e.shadow.name
	}
	t.Source = cmp.Or(t.Source, TruthDefault)
	t.Reason = cmp.Or(t.Reason, fmt.Sprintf("%s is authoritative as configured", t.Side))
	return t
}

// truthLine is the line every format prints: the truth, and what the
// gate decides in the run's stage.
func truthLine(r *Report) string {
	t := r.Truth
	if t.Side == "" {
		return ""
	}
	gate, ok := gates[t.Stage]
	if !ok {
		gate = "the other store must hold what " + t.Store + " holds"
	}
	return fmt.Sprintf("truth: %s (the %s), %s: %s; the gate: %s", t.Store, t.Side, t.Source, t.Reason, gate)
}

// gates say what the parity gate decides in each stage.
var gates = map[string]string{
	"off":       "none yet: MongoDB is not written in off, and parity says how much a backfill has to copy",
	"dualwrite": "the step to the handover: MongoDB must hold what Workers KV holds",
	"shadow":    "the step to the handover: MongoDB must hold what Workers KV holds",
	"handover":  "the flip to live: MongoDB must hold what Workers KV holds (the proxy's own full comparison holds the flip too)",
	"live":      "the way back: Workers KV must hold what MongoDB holds before a step back to handover",
	"rampdown":  "the way back: Workers KV must hold what MongoDB holds before a step back to live (complete does not need it)",
	"complete":  "none: Workers KV is no longer written and falls behind MongoDB, as expected; the run passes whatever its parity",
}

// authority is the truth the advice takes: MongoDB alone after complete.
func (r *Report) authority() compare.Authority {
	switch {
	case r.Truth.Side != Shadow:
		return compare.PrimaryAuthority
	case r.Truth.Stage == "complete":
		return compare.ShadowAlone
	}
	return compare.ShadowAuthority
}
