package dualwrite

import (
	"fmt"
	"strings"
)

// Stage is a step of the migration. The zero value is Off.
type Stage uint8

// The stages, in migration order (after LaunchDarkly's migration stages).
const (
	// Off: only the primary is read and written.
	Off Stage = iota
	// DualWrite: writes go to the primary, then to the shadow; reads are
	// the primary's.
	DualWrite
	// Shadow: as DualWrite, and a sample of reads is compared with the
	// shadow.
	Shadow
	// Handover: as Shadow, while tee mode's Workers route every read and
	// write through the proxy: the fence before the flip (see The handover).
	Handover
	// Live: the shadow is authoritative: writes go to it, then to the
	// primary; reads are the shadow's, a sample compared with the primary.
	Live
	// Rampdown: as Live, without comparison.
	Rampdown
	// Complete: only the shadow is read and written.
	Complete
)

// Stages lists every stage in migration order.
var Stages = []Stage{Off, DualWrite, Shadow, Handover, Live, Rampdown, Complete}

// stageNames are what the control document, the heartbeats and every
// configuration hold: a Stage's number is never persisted, so inserting a
// stage keeps every stored document readable.
var stageNames = [...]string{"off", "dualwrite", "shadow", "handover", "live", "rampdown", "complete"}

// String returns the stage's name as ParseStage reads it.
func (s Stage) String() string {
	if int(s) < len(stageNames) {
		return stageNames[s]
	}
	return fmt.Sprintf("stage(%d)", uint8(s))
}

// Valid reports whether s is one of Stages.
func (s Stage) Valid() bool { return int(s) < len(stageNames) }

// ParseStage reads a stage name, case-insensitively; "dual-write" and
// "dual_write" are accepted for DualWrite.
func ParseStage(name string) (Stage, error) {
	n := strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(strings.TrimSpace(name)))
	for i, s := range stageNames {
		if n == s {
			return Stage(i), nil
		}
	}
	return Off, fmt.Errorf("%w: unknown stage %q (want one of %s)", ErrInvalidConfig, name, StageNames())
}

// StageNames is every stage's name, in migration order, comma-separated:
// what a refusal of an unknown stage offers.
func StageNames() string { return strings.Join(stageNames[:], ", ") }

// MarshalText implements encoding.TextMarshaler, so a Stage works with
// flag.TextVar and in JSON or YAML configuration.
func (s Stage) MarshalText() ([]byte, error) {
	if !s.Valid() {
		return nil, fmt.Errorf("%w: %s", ErrInvalidConfig, s)
	}
	return []byte(s.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Stage) UnmarshalText(b []byte) error {
	v, err := ParseStage(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Role names a store by its identity in the migration, whatever the stage:
// the primary is Workers KV, the shadow MongoDB.
type Role uint8

const (
	// RolePrimary is the store the migration starts from.
	RolePrimary Role = iota
	// RoleShadow is the store the migration moves to.
	RoleShadow
)

func (r Role) String() string {
	if r == RolePrimary {
		return "primary"
	}
	return "shadow"
}

// The stage table of the design, as functions.

// authority is the store whose result is the caller's: it is written
// synchronously and read.
func (s Stage) authority() Role {
	if s >= Live {
		return RoleShadow
	}
	return RolePrimary
}

// mirrors reports whether the other store is written asynchronously.
func (s Stage) mirrors() bool { return s != Off && s != Complete }

// compares reports whether a sample of reads is compared with the other
// store.
func (s Stage) compares() bool { return s == Shadow || s == Handover || s == Live }

// RoutesThroughProxy reports whether tee mode's Workers send every read and
// write through the proxy in stage s, rather than through their binding
// (from Handover on: see the package doc).
func (s Stage) RoutesThroughProxy() bool { return s >= Handover }

// ShadowAuthoritative reports whether MongoDB (the shadow) is the
// authoritative store in stage s: from Live on.
func (s Stage) ShadowAuthoritative() bool { return s.authority() == RoleShadow }

// IsFlip reports whether going from one stage to the other changes which
// store is authoritative.
func IsFlip(from, to Stage) bool { return from.authority() != to.authority() }

// CheckTransition is the stage machine, the one place its rules live:
// dualwrite.Store.SetStage, the control document (package control) and the
// admin API all refuse what it refuses. A stage moves one step along Stages,
// forward or back; Complete is one-way. Staying put is allowed. A refusal
// matches ErrStageTransition and names the next allowed steps.
//
// No skip is safe: a skip forward from DualWrite past Shadow leaves the
// flip unchecked by any comparison, one past Handover lets tee mode's
// Workers still write their binding when MongoDB becomes authoritative, and
// one past Rampdown stops writing Workers KV while a way back is still
// offered.
func CheckTransition(from, to Stage) error {
	if !to.Valid() {
		return fmt.Errorf("%w: unknown stage %s", ErrInvalidConfig, to)
	}
	if !from.Valid() {
		return fmt.Errorf("%w: unknown stage %s", ErrInvalidConfig, from)
	}
	if from == to {
		return nil
	}
	if from == Complete {
		return fmt.Errorf("%w: %s is one-way (Workers KV was not written there, so going back would make a stale store authoritative); no stage follows it",
			ErrStageTransition, from)
	}
	if to == from+1 || to+1 == from {
		return nil
	}
	return fmt.Errorf("%w: %s to %s skips a step; from %s the next allowed %s", ErrStageTransition, from, to, from, nextSteps(from))
}

// NextStages returns the stages CheckTransition allows from s, back first.
func NextStages(s Stage) []Stage {
	var out []Stage
	if s == Complete || !s.Valid() {
		return out
	}
	if s > Off {
		out = append(out, s-1)
	}
	return append(out, s+1)
}

func nextSteps(s Stage) string {
	next := NextStages(s)
	names := make([]string, len(next))
	for i, n := range next {
		names[i] = n.String()
	}
	if len(names) == 1 {
		return "stage is " + names[0]
	}
	return "stages are " + strings.Join(names, " and ")
}

// other is the store that is not authoritative.
func (r Role) other() Role { return 1 - r }

// Stage returns the current stage.
func (s *Store) Stage() Stage { return Stage(s.stage.Load()) }
