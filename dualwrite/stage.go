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
	// Live: the shadow is authoritative: writes go to it, then to the
	// primary; reads are the shadow's, a sample compared with the primary.
	Live
	// Rampdown: as Live, without comparison.
	Rampdown
	// Complete: only the shadow is read and written.
	Complete
)

// Stages lists every stage in migration order.
var Stages = []Stage{Off, DualWrite, Shadow, Live, Rampdown, Complete}

var stageNames = [...]string{"off", "dualwrite", "shadow", "live", "rampdown", "complete"}

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
	return Off, fmt.Errorf("%w: unknown stage %q (want one of %s)", ErrInvalidConfig, name, strings.Join(stageNames[:], ", "))
}

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
func (s Stage) compares() bool { return s == Shadow || s == Live }

// IsFlip reports whether going from one stage to the other changes which
// store is authoritative.
func IsFlip(from, to Stage) bool { return from.authority() != to.authority() }

// CheckTransition applies the rules of SetStage that need no store, so that
// whoever coordinates several stores (the proxy's stage document) refuses
// what each store would: the stage must be known, and a flip may start only
// from a stage that writes both stores, since the store made authoritative
// would otherwise serve data it never received. The rules that need the
// store (drained lanes, no dirty keys) stay SetStage's.
func CheckTransition(from, to Stage) error {
	if !to.Valid() {
		return fmt.Errorf("%w: unknown stage %s", ErrInvalidConfig, to)
	}
	if IsFlip(from, to) && !from.mirrors() {
		next := DualWrite
		if from == Complete {
			next = Rampdown
		}
		return fmt.Errorf("%w: from %s to %s would make authoritative a store that %s does not write; go through %s first",
			ErrStageTransition, from, to, from, next)
	}
	return nil
}

// other is the store that is not authoritative.
func (r Role) other() Role { return 1 - r }
