package cli

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/internal/kvenv"
	"github.com/kvshadow/kvshadow/internal/report"
)

// options are the parsed flags and environment of one run; cfg is the
// report's Config as the flags set it, its stores and truth still to come.
type options struct {
	cfAccount, cfNamespace, cfBaseURL, cfToken string
	cfMaxBulkWrite                             int
	mongoURI, mongoDB, controlDB               string

	cfg       report.Config
	format    report.Format
	out       string
	progress  string
	auth      report.Role
	authSet   bool // --authoritative was given
	forceAuth bool
	demo      bool
	help      bool
}

// budgetFlag reads "1200/5m" or "unlimited".
type budgetFlag struct{ dst *report.Budget }

func (b budgetFlag) String() string {
	if b.dst == nil {
		return ""
	}
	return b.dst.String()
}

func (b budgetFlag) Set(v string) error {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "unlimited", "none", "off":
		*b.dst = report.Budget{Requests: -1}
		return nil
	}
	n, per, ok := strings.Cut(v, "/")
	reqs, nerr := strconv.Atoi(strings.TrimSpace(n))
	d, derr := time.ParseDuration(strings.TrimSpace(per))
	if !ok || nerr != nil || reqs <= 0 || derr != nil || d <= 0 {
		return errors.New(`want "<requests>/<duration>", such as 1200/5m, or "unlimited"`)
	}
	*b.dst = report.Budget{Requests: reqs, Per: d}
	return nil
}

// envReportSecret is the name the report read before it shared the proxy's
// key secret (kvenv.KeySecret: one secret for both, so that a key hashed in
// a report is the key hashed in the proxy's /dirty, its logs and its spans,
// and the same from one run to the next); still read, and refused when it
// disagrees. Secrets come from the environment only: flags show in ps.
const envReportSecret = "KVSHADOW_REPORT_SECRET"

// parse reads args and the environment. A usage error wraps errUsage.
func parse(args []string, getenv func(string) string) (*options, error) {
	o := &options{}
	c := &o.cfg
	c.Primary.Budget, c.Shadow.Budget = report.DefaultBudget, report.Budget{Requests: -1}
	fs := flag.NewFlagSet("shadow-report", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by Run
	var format, keys, auth, keysFile string
	var sample float64
	fs.StringVar(&o.cfAccount, "cf-account", "", "")
	fs.StringVar(&o.cfNamespace, "cf-namespace", "", "")
	fs.StringVar(&o.cfBaseURL, "cf-base-url", "", "")
	fs.Var(budgetFlag{&c.Primary.Budget}, "cf-budget", "")
	fs.IntVar(&o.cfMaxBulkWrite, "cf-max-bulk-write", 0, "")
	fs.StringVar(&o.mongoDB, "mongo-db", "", "")
	fs.StringVar(&o.controlDB, "control-db", "", "")
	fs.Var(budgetFlag{&c.Shadow.Budget}, "mongo-budget", "")
	fs.Var((*kvenv.List)(&c.Scope.Modules), "module", "")
	fs.Var((*kvenv.List)(&c.Scope.ExcludeModules), "exclude-module", "")
	fs.Var((*kvenv.List)(&c.Scope.Prefixes), "prefix", "")
	fs.Var((*kvenv.List)(&c.Scope.ExcludePrefixes), "exclude-prefix", "")
	fs.Float64Var(&sample, "sample", 1, "")
	fs.StringVar(&keysFile, "keys-file", "", "")
	fs.DurationVar(&c.TTLTolerance, "ttl-tolerance", compare.DefaultTTLTolerance, "")
	c.MinParity = 100
	fs.Var(minParityFlag{&c.MinParity}, "min-parity", "")
	fs.DurationVar(&c.Settle, "settle", DefaultSettle, "")
	fs.StringVar(&format, "format", "", "")
	fs.StringVar(&o.out, "out", "", "")
	fs.StringVar(&keys, "keys", string(compare.KeyHMAC), "")
	fs.IntVar(&c.MaxRecords, "max-keys", report.DefaultMaxRecords, "")
	fs.StringVar(&c.Checkpoint, "checkpoint", "", "")
	fs.Int64Var(&c.ExpectedKeys, "expected-keys", 0, "")
	fs.IntVar(&c.Concurrency, "concurrency", report.DefaultConcurrency, "")
	fs.IntVar(&c.BatchSize, "batch", report.DefaultBatchSize, "")
	fs.StringVar(&o.progress, "progress", "auto", "")
	fs.DurationVar(&c.ProgressEvery, "progress-every", 0, "")
	fs.BoolVar(&c.Repair.Enabled, "repair", false, "")
	fs.BoolVar(&c.Repair.Apply, "apply", false, "")
	fs.StringVar(&auth, "authoritative", "", "")
	fs.BoolVar(&o.forceAuth, "force-authoritative", false, "")
	fs.BoolVar(&o.demo, "demo", false, "")
	fs.BoolVar(&o.help, "help", false, "")
	fs.BoolVar(&o.help, "h", false, "")
	if err := fs.Parse(args); err != nil {
		return nil, usage("%s", flagError(err))
	}
	if o.help {
		return o, nil
	}
	if fs.NArg() > 0 {
		return nil, usage("unexpected argument %q (every option is a flag)", fs.Arg(0))
	}
	settleSet := false
	fs.Visit(func(f *flag.Flag) { settleSet = settleSet || f.Name == "settle" })
	switch {
	case c.Settle < 0:
		return nil, usage("--settle %s: want a duration of 0s or more", c.Settle)
	case o.demo && !settleSet:
		c.Settle = 0 // the demo's stores change only by its own hand
	}

	cf := cfkv.ConfigFromEnv(getenv) // the flags win
	o.cfAccount = cmp.Or(o.cfAccount, cf.AccountID)
	o.cfNamespace = cmp.Or(o.cfNamespace, cf.NamespaceID)
	o.cfBaseURL = cmp.Or(o.cfBaseURL, cf.BaseURL)
	o.cfToken = cf.APIToken
	o.mongoURI = strings.TrimSpace(getenv(kvenv.MongoURI))
	// The bot's MongoKVStore opens "miti99bot" whatever its URI says; the
	// report reads what the bot reads. connect warns when the URI names
	// another database.
	o.mongoDB = kvenv.Database(o.mongoDB, getenv)
	secret := getenv(kvenv.KeySecret)
	if old := getenv(envReportSecret); old != "" {
		if secret != "" && secret != old {
			return nil, usage("%s and %s are both set and differ: keep one (%s, the proxy's), so that hashed keys agree with the proxy's", kvenv.KeySecret, envReportSecret, kvenv.KeySecret)
		}
		secret = old
	}
	c.Secret = []byte(secret)

	var err error
	if o.format, err = report.ParseFormat(cmp.Or(format, formatOf(o.out))); err != nil {
		return nil, usage("--format %q: want table, json, markdown or html", format)
	}
	if c.KeyPolicy, err = compare.ParseKeyPolicy(keys); err != nil {
		return nil, usage("--keys %q: want hmac, plain or hidden", keys)
	}
	o.authSet = auth != ""
	if o.auth, err = report.ParseRole(cmp.Or(auth, string(report.Primary))); err != nil {
		return nil, usage("--authoritative %q: want primary or shadow", auth)
	}
	if o.forceAuth && !o.authSet {
		return nil, usage("--force-authoritative needs --authoritative primary|shadow: it forces that choice against the stage document")
	}
	// The stage document lives where kvshadow-proxy's --control-db says:
	// by default the shadow's database.
	o.controlDB = cmp.Or(o.controlDB, o.mongoDB)
	switch {
	case !(sample > 0 && sample <= 1):
		return nil, usage("--sample %g: want a fraction in (0, 1], such as 0.01 for 1%%", sample)
	case c.Repair.Apply && !c.Repair.Enabled:
		return nil, usage("--apply needs --repair (a repair is a dry run until --apply)")
	case !slices.Contains([]string{"auto", "always", "lines", "never"}, o.progress):
		return nil, usage("--progress %q: want auto, always, lines or never", o.progress)
	case c.ProgressEvery < 0:
		return nil, usage("--progress-every %s is negative", c.ProgressEvery)
	case c.MaxRecords < 0 || c.Concurrency < 1 || c.BatchSize < 1 || c.ExpectedKeys < 0:
		return nil, usage("--max-keys, --concurrency, --batch and --expected-keys take positive numbers")
	case c.BatchSize > 100:
		return nil, usage("--batch %d: Workers KV reads at most 100 keys a request", c.BatchSize)
	case o.cfMaxBulkWrite < 0 || o.cfMaxBulkWrite > 10_000:
		return nil, usage("--cf-max-bulk-write %d: a bulk write takes 1 to 10000 pairs (1000 through a bridge Worker)", o.cfMaxBulkWrite)
	case c.TTLTolerance < 0:
		return nil, usage("--ttl-tolerance %s is negative (0s compares expiries exactly)", c.TTLTolerance)
	}
	// A flag's zero means none (exact expiries, no key listed, no gate);
	// the Config's, its default.
	if c.TTLTolerance == 0 {
		c.TTLTolerance = -1
	}
	if c.MaxRecords == 0 {
		c.MaxRecords = -1
	}
	if c.MinParity == 0 {
		c.MinParity = -1
	}
	c.Scope.SampleRate = sample
	if keysFile != "" {
		if c.Scope.Keys, err = readKeyList(keysFile); err != nil {
			return nil, err
		}
	}
	if !o.demo {
		if missing := kvenv.Missing(map[string]string{
			"CLOUDFLARE_ACCOUNT_ID (or --cf-account)":        o.cfAccount,
			"CLOUDFLARE_KV_NAMESPACE_ID (or --cf-namespace)": o.cfNamespace,
			"CLOUDFLARE_API_TOKEN":                           o.cfToken,
			"MONGODB_URI":                                    o.mongoURI,
		}); missing != "" {
			return nil, usage("missing %s (or try --demo)", missing)
		}
	}
	return o, nil
}

// flagInvalid is how package flag words a refused value.
var flagInvalid = regexp.MustCompile(`^invalid value "(.*)" for flag -(\S+): `)

// flagError words package flag's errors as the help writes flags: --name.
func flagError(err error) string {
	msg := err.Error()
	if m := flagInvalid.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("--%s %s: %s", m[2], m[1], msg[len(m[0]):])
	}
	return strings.Replace(msg, "provided but not defined: -", "provided but not defined: --", 1)
}

// formatOf guesses the format from an output file's extension.
func formatOf(out string) string {
	switch strings.ToLower(filepath.Ext(out)) {
	case ".json":
		return string(report.FormatJSON)
	case ".md", ".markdown":
		return string(report.FormatMarkdown)
	case ".html", ".htm":
		return string(report.FormatHTML)
	}
	return ""
}

// errUsage marks a mistake in the command line; the message says which.
var errUsage = errors.New("usage")

type usageError struct{ msg string }

func (e *usageError) Error() string   { return e.msg }
func (e *usageError) Is(t error) bool { return t == errUsage }

func usage(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// DefaultSettle is --settle's default: Workers KV's consistency window
// (60 s), which a proxy's verification waits too, and 10 s for the copies
// in its lanes.
const DefaultSettle = 70 * time.Second
