package report

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/budget"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

// The errors of a run, checked with errors.Is.
var (
	// ErrConfig: the Config is unusable; Run reports it before any I/O.
	ErrConfig = errors.New("report: invalid configuration")
	// ErrInterrupted: the run stopped before the end (its context ended).
	// Everything committed before is in the checkpoint, when there is one.
	ErrInterrupted = errors.New("report: scan interrupted")
	// ErrCheckpoint: the checkpoint file cannot be read or written, or is
	// another run's.
	ErrCheckpoint = errors.New("report: checkpoint")
	// ErrUnordered: a store listed keys out of UTF-8 byte order, which a
	// merge-join cannot survive.
	ErrUnordered = errors.New("report: store listed keys out of byte order")
)

// Defaults of the zero Config.
const (
	DefaultBatchSize          = 100 // Workers KV's bulk-get limit
	DefaultConcurrency        = 4
	DefaultMaxRecords         = 1000
	DefaultMaxModules         = 1000
	DefaultRetries            = 6
	DefaultRecheckWindow      = 60 * time.Second // Workers KV's read consistency
	DefaultCheckpointEvery    = time.Second
	DefaultProgressLinesEvery = 30 * time.Second // progress lines to a log
)

// DefaultBudget is Workers KV's account API limit: the primary's budget when
// its Config leaves it zero.
var DefaultBudget = budget.WorkersKV

// Role names a side of the comparison: the primary is Workers KV, the
// shadow MongoDB, whichever is authoritative.
type Role string

// The two roles.
const (
	Primary Role = "primary"
	Shadow  Role = "shadow"
)

// ParseRole reads "primary" or "shadow".
func ParseRole(s string) (Role, error) {
	switch r := Role(strings.ToLower(s)); r {
	case Primary, Shadow:
		return r, nil
	}
	return "", fmt.Errorf("%w: role %q (want primary or shadow)", ErrConfig, s)
}

// Budget caps a side's requests; the zero value means the side's default.
type Budget = budget.Budget

// Side is one store of the comparison.
type Side struct {
	Store kv.Store
	// Name labels the side in reports ("cloudflare_kv", "mongodb"); empty
	// means the role's name. It must not carry secrets.
	Name string
	// Budget caps the run's requests to this store, scan and repair
	// together. Zero: DefaultBudget for the primary, no cap for the shadow.
	Budget Budget
	// BulkLimit is the most keys one bulk read or write carries; zero means
	// BatchSize.
	BulkLimit int
	// Spent is what the caller already asked of this store for this run
	// (shadow-report's check that both stores answer): counted in the
	// report and booked in the budget.
	Spent Requests
}

// Scope selects the keys a run looks at. The zero value is every key.
type Scope struct {
	// Modules and Prefixes, when either is set, restrict the scan to the
	// keys of those modules ("wordle" means the raw prefix "wordle:") and
	// key prefixes; only those ranges are listed.
	Modules  []string `json:"modules"`
	Prefixes []string `json:"prefixes"`
	// ExcludeModules and ExcludePrefixes drop keys inside the scanned
	// ranges, as kv.ReservedPrefix always is: listed, neither counted nor
	// read (Counts.Excluded).
	ExcludeModules  []string `json:"exclude_modules"`
	ExcludePrefixes []string `json:"exclude_prefixes"`
	// SampleRate in (0, 1] compares that fraction of the keys, chosen by a
	// hash of the key so both stores and every rerun pick the same ones;
	// zero means 1. Keys are still listed and counted on each side.
	SampleRate float64 `json:"sample_rate"`
	// Keys, when set, makes a key-list run ("Key lists" in the package
	// doc); the fields above still filter them. They are user data: a
	// report carries only their number, KeyList, which Run sets.
	Keys    []string `json:"-"`
	KeyList int      `json:"key_list,omitempty"`
}

// Repair configures the repair of divergent keys (see "Repair" in the
// package doc). The zero value does not repair.
type Repair struct {
	Enabled bool
	Apply   bool // without it, a dry run
	// Authoritative is the side copied from; empty means Primary.
	Authoritative Role
	// RecheckWindow is how long a write into the primary may take to be
	// read back: a re-check that still differs inside it is "pending".
	// Zero means DefaultRecheckWindow.
	RecheckWindow time.Duration
}

// Config configures Run. The zero value of every field but the two stores
// means its documented default.
type Config struct {
	Primary, Shadow Side
	Scope           Scope
	// TTLTolerance is passed to compare.Options: zero means
	// compare.DefaultTTLTolerance, negative means exact.
	TTLTolerance time.Duration
	// KeyPolicy says how keys appear in the report; empty means
	// compare.KeyHMAC.
	KeyPolicy compare.KeyPolicy
	// Secret keys the HMAC of keys and value digests. Empty draws a random
	// one, kept in the checkpoint so that a resumed run hashes alike.
	Secret []byte
	// BatchSize is the keys read from each store at once, Concurrency the
	// batches read at once, ListLimit the page size (zero: kv.MaxListLimit).
	BatchSize   int
	ListLimit   int
	Concurrency int
	// Retries is how often an unavailable store is retried, after the
	// delay it asks for, before its keys count as errors (or a listing
	// fails the run); zero means DefaultRetries, negative means none.
	Retries int
	// MaxRecords caps the divergent keys the report lists (the counts stay
	// exact); zero means DefaultMaxRecords, negative means none listed.
	MaxRecords int
	// MaxModules caps the modules counted apart (then OtherModules).
	MaxModules int
	Repair     Repair
	RunID      string
	// Truth says why Repair.Authoritative is the authoritative store, for
	// the report; its Side is ignored.
	Truth Truth
	// Settle, when positive, reads the keys the scan found divergent again
	// once it has passed since their first read ("Reading again what
	// differs" in the package doc); zero reads nothing again. Not with
	// Repair: its dry run says at once what it would copy, and applied it
	// reads its repairs back.
	Settle time.Duration
	// MinParity is the gate, in percent, to at most 4 decimals (parity's
	// precision); zero means 100, negative means 0 (every report passes).
	MinParity float64
	// Checkpoint is the path of the checkpoint file (see "Checkpoints" in
	// the package doc); empty means none.
	Checkpoint      string
	CheckpointEvery time.Duration
	// Identity describes the two stores (never secrets) so that a
	// checkpoint is not resumed against other stores.
	Identity string
	// Progress receives the run's progress; nil means none. By default it
	// is one line redrawn every second, for a terminal; with ProgressLines
	// plain lines (no carriage returns or escape codes) every ProgressEvery
	// (zero: DefaultProgressLinesEvery), for a log.
	Progress      io.Writer
	ProgressLines bool
	ProgressEvery time.Duration
	// ExpectedKeys, when known, lets the progress line estimate the time
	// left.
	ExpectedKeys int64
	// Notices receives one-line notices (resuming from a checkpoint, a
	// stale cursor, a store asking to be left alone), each in one Write,
	// possibly from several goroutines; nil means none.
	Notices io.Writer
	Clock   clock.Clock
}

// normalized returns cfg with its defaults filled in, or an ErrConfig error.
func (cfg Config) normalized() (Config, error) {
	c := cfg
	if c.Primary.Store == nil || c.Shadow.Store == nil {
		return c, fmt.Errorf("%w: both stores are required", ErrConfig)
	}
	c.Primary.Name = cmp.Or(c.Primary.Name, string(Primary))
	c.Shadow.Name = cmp.Or(c.Shadow.Name, string(Shadow))
	c.Primary.Budget = cmp.Or(c.Primary.Budget, DefaultBudget)
	c.Shadow.Budget = cmp.Or(c.Shadow.Budget, Budget{Requests: -1})
	for _, s := range []*Side{&c.Primary, &c.Shadow} {
		if s.Budget.Requests > 0 && s.Budget.Per <= 0 {
			return c, fmt.Errorf("%w: %s budget of %d requests needs a positive period", ErrConfig, s.Name, s.Budget.Requests)
		}
		if s.BulkLimit < 0 {
			return c, fmt.Errorf("%w: %s bulk limit %d is negative", ErrConfig, s.Name, s.BulkLimit)
		}
	}
	pol, err := compare.ParseKeyPolicy(string(c.KeyPolicy))
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c.KeyPolicy = pol
	c.BatchSize = cmp.Or(c.BatchSize, DefaultBatchSize)
	c.ListLimit = cmp.Or(c.ListLimit, kv.MaxListLimit)
	c.Concurrency = cmp.Or(c.Concurrency, DefaultConcurrency)
	c.MaxModules = cmp.Or(c.MaxModules, DefaultMaxModules)
	c.CheckpointEvery = cmp.Or(c.CheckpointEvery, DefaultCheckpointEvery)
	c.Repair.RecheckWindow = cmp.Or(c.Repair.RecheckWindow, DefaultRecheckWindow)
	if c.Settle < 0 {
		return c, fmt.Errorf("%w: Settle must not be negative", ErrConfig)
	}
	c.Retries = orDefault(c.Retries, DefaultRetries)
	c.MaxRecords = orDefault(c.MaxRecords, DefaultMaxRecords)
	c.MinParity = orDefault(c.MinParity, 100)
	if c.Repair.Authoritative, err = ParseRole(cmp.Or(string(c.Repair.Authoritative), string(Primary))); err != nil {
		return c, err
	}
	if !slices.Contains([]TruthSource{"", TruthStage, TruthForced, TruthFlag, TruthDefault}, c.Truth.Source) {
		return c, fmt.Errorf("%w: truth source %q", ErrConfig, c.Truth.Source)
	}
	if c.Repair.Apply && !c.Repair.Enabled {
		return c, fmt.Errorf("%w: applying a repair needs the repair enabled", ErrConfig)
	}
	switch {
	case c.BatchSize < 0 || c.Concurrency < 0 || c.MaxModules < 0:
		return c, fmt.Errorf("%w: batch size, concurrency and module cap must be positive", ErrConfig)
	case c.ListLimit < 0 || c.ListLimit > kv.MaxListLimit:
		return c, fmt.Errorf("%w: list limit %d outside 1..%d", ErrConfig, c.ListLimit, kv.MaxListLimit)
	case c.MinParity > 100:
		return c, fmt.Errorf("%w: minimum parity %g%% outside 0..100", ErrConfig, c.MinParity)
	}
	c.Primary.BulkLimit = cmp.Or(c.Primary.BulkLimit, c.BatchSize)
	c.Shadow.BulkLimit = cmp.Or(c.Shadow.BulkLimit, c.BatchSize)
	if c.Scope, err = c.Scope.normalized(); err != nil {
		return c, err
	}
	switch {
	case c.ProgressEvery < 0:
		return c, fmt.Errorf("%w: progress interval %s is negative", ErrConfig, c.ProgressEvery)
	case c.ProgressEvery == 0 && c.ProgressLines:
		c.ProgressEvery = DefaultProgressLinesEvery
	case c.ProgressEvery == 0:
		c.ProgressEvery = time.Second
	}
	c.ExpectedKeys = cmp.Or(c.ExpectedKeys, int64(c.Scope.KeyList))
	c.Clock = clock.OrReal(c.Clock)
	return c, nil
}

// normalized validates the scope and sorts its lists, so that two equal
// scopes fingerprint alike.
func (s Scope) normalized() (Scope, error) {
	out := Scope{SampleRate: cmp.Or(s.SampleRate, 1)}
	if !(out.SampleRate > 0 && out.SampleRate <= 1) {
		return out, fmt.Errorf("%w: sample rate %g outside (0, 1]", ErrConfig, s.SampleRate)
	}
	var err error
	if out.Modules, err = sortedValid(s.Modules, kv.ValidateModule); err != nil {
		return out, err
	}
	if out.ExcludeModules, err = sortedValid(s.ExcludeModules, kv.ValidateModule); err != nil {
		return out, err
	}
	if out.Prefixes, err = sortedValid(s.Prefixes, validPrefix); err != nil {
		return out, err
	}
	if out.ExcludePrefixes, err = sortedValid(s.ExcludePrefixes, validPrefix); err != nil {
		return out, err
	}
	if len(s.Keys) > 0 {
		if err := kv.ValidateKeys(s.Keys); err != nil {
			return out, fmt.Errorf("%w: key list: %w", ErrConfig, err)
		}
		out.Keys = slices.Compact(slices.Sorted(slices.Values(s.Keys)))
		out.KeyList = len(out.Keys)
	}
	return out, nil
}

// sortedValid returns in sorted and without repeats once check accepts
// every item.
func sortedValid(in []string, check func(string) error) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, v := range in {
		if err := check(v); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		out = append(out, v)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func validPrefix(p string) error {
	if p == "" {
		return errors.New("empty prefix (leave the prefixes out to scan every key)")
	}
	_, err := kv.ValidateListOptions(kv.ListOptions{Prefix: p})
	return err
}

// ranges returns the disjoint key prefixes to list, in byte order: every
// included module and prefix, less those inside another, or "" for all.
func (s Scope) ranges() []string {
	if len(s.Modules) == 0 && len(s.Prefixes) == 0 {
		return []string{""}
	}
	all := slices.Clone(s.Prefixes)
	for _, m := range s.Modules {
		all = append(all, m+":")
	}
	slices.Sort(all)
	out := all[:0]
	for _, p := range all {
		if len(out) > 0 && strings.HasPrefix(p, out[len(out)-1]) {
			continue // inside the previous range (or equal to it)
		}
		out = append(out, p)
	}
	return out
}

// inRanges reports whether key starts with one of prefixes: for the scan's
// ranges ("" for every key), whether a listing would have reached it.
func inRanges(key string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(key, p) })
}

// excluded reports whether key is out of scope within its range: under
// an excluded module or prefix, or kv.ReservedPrefix, which no run scans.
func (s Scope) excluded(key, module string) bool {
	if strings.HasPrefix(key, kv.ReservedPrefix) {
		return true
	}
	if len(s.ExcludeModules) > 0 && module != "" {
		if _, found := slices.BinarySearch(s.ExcludeModules, module); found {
			return true
		}
	}
	return inRanges(key, s.ExcludePrefixes)
}

// orDefault reads a Config field whose zero means def and whose negative
// means none.
func orDefault[T ~int | ~int64 | ~float64](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}
