package kv

import (
	"fmt"
	"slices"
	"strings"
)

// ReservedPrefix starts the keys kvshadow keeps for itself in a bot's
// namespace. They are never data: every part of kvshadow that copies,
// compares, verifies, repairs or reports keys leaves them out, whatever
// else it is told to exclude.
const ReservedPrefix = "__kvshadow:"

// ErrReservedKey reports a client's key under ReservedPrefix, where the
// client-facing routes (kvapi's front, ingest) refuse it; it matches ErrInvalidKey.
var ErrReservedKey = fmt.Errorf("%w: the key is under %s, which is kvshadow's own", ErrInvalidKey, ReservedPrefix)

// Exclusions is a set of key prefixes left out of a migration (a bot's
// own bookkeeping, such as "__retry:"), with ReservedPrefix always among
// them. The zero value excludes ReservedPrefix alone.
type Exclusions struct {
	prefixes []string // without ReservedPrefix, sorted, unique
}

// NewExclusions checks prefixes (none empty, each a valid list prefix) and
// returns the set they make with ReservedPrefix.
func NewExclusions(prefixes []string) (Exclusions, error) {
	var out []string
	for _, p := range prefixes {
		if p == "" {
			return Exclusions{}, fmt.Errorf("%w: an empty excluded prefix would exclude every key", ErrInvalidKey)
		}
		if _, err := ValidateListOptions(ListOptions{Prefix: p}); err != nil {
			return Exclusions{}, err
		}
		if !strings.HasPrefix(p, ReservedPrefix) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return Exclusions{prefixes: out}, nil
}

// Excludes reports whether key is under an excluded prefix.
func (e Exclusions) Excludes(key string) bool {
	if strings.HasPrefix(key, ReservedPrefix) {
		return true
	}
	for _, p := range e.prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Prefixes returns every excluded prefix, ReservedPrefix first.
func (e Exclusions) Prefixes() []string {
	return append([]string{ReservedPrefix}, e.prefixes...)
}
