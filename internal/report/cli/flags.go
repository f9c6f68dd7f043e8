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

// options are the parsed flags and environment of one run.
type options struct {
	cfAccount, cfNamespace, cfBaseURL, cfToken string
	cfMaxBulkWrite                             int
	mongoURI, mongoDB, controlDB               string
	cfBudget, mongoBudget                      report.Budget

	scope        report.Scope
	ttlTolerance time.Duration
	minParity    float64
	settle       time.Duration
	format       report.Format
	out          string
	keys         compare.KeyPolicy
	secret       string
	maxKeys      int
	checkpoint   string
	expectedKeys int64
	concurrency  int
	batch        int
	progress     string
	progressTick time.Duration
	repair       bool
	apply        bool
	auth         report.Role
	authSet      bool // --authoritative was given
	forceAuth    bool
	demo         bool
	help         bool
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

// Environment variables the command reads besides Cloudflare's and
// MONGODB_URI. Secrets come from the environment only: flags show in ps.
const (
	EnvMongoURI = kvenv.MongoURI // the names are kvenv's, which kvshadow-proxy and botkv read too
	EnvMongoDB  = kvenv.MongoDB
	// EnvSecret is the proxy's key secret: one secret for both, so that a
	// key hashed in a report is the key hashed in the proxy's /dirty, its
	// logs and its spans, and the same from one run to the next.
	EnvSecret = kvenv.KeySecret
	// EnvReportSecret is the name the report read before it shared the
	// proxy's; still read, and refused when it disagrees with EnvSecret.
	EnvReportSecret = "KVSHADOW_REPORT_SECRET"
)

// parse reads args and the environment. A usage error wraps errUsage.
func parse(args []string, getenv func(string) string) (*options, error) {
	o := &options{cfBudget: report.DefaultBudget, mongoBudget: report.Budget{Requests: -1}}
	fs := flag.NewFlagSet("shadow-report", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by Run
	var format, keys, auth, keysFile string
	var sample float64
	fs.StringVar(&o.cfAccount, "cf-account", "", "")
	fs.StringVar(&o.cfNamespace, "cf-namespace", "", "")
	fs.StringVar(&o.cfBaseURL, "cf-base-url", "", "")
	fs.Var(budgetFlag{&o.cfBudget}, "cf-budget", "")
	fs.IntVar(&o.cfMaxBulkWrite, "cf-max-bulk-write", 0, "")
	fs.StringVar(&o.mongoDB, "mongo-db", "", "")
	fs.StringVar(&o.controlDB, "control-db", "", "")
	fs.Var(budgetFlag{&o.mongoBudget}, "mongo-budget", "")
	fs.Var((*kvenv.List)(&o.scope.Modules), "module", "")
	fs.Var((*kvenv.List)(&o.scope.ExcludeModules), "exclude-module", "")
	fs.Var((*kvenv.List)(&o.scope.Prefixes), "prefix", "")
	fs.Var((*kvenv.List)(&o.scope.ExcludePrefixes), "exclude-prefix", "")
	fs.Float64Var(&sample, "sample", 1, "")
	fs.StringVar(&keysFile, "keys-file", "", "")
	fs.DurationVar(&o.ttlTolerance, "ttl-tolerance", compare.DefaultTTLTolerance, "")
	o.minParity = 100
	fs.Var(minParityFlag{&o.minParity}, "min-parity", "")
	fs.DurationVar(&o.settle, "settle", DefaultSettle, "")
	fs.StringVar(&format, "format", "", "")
	fs.StringVar(&o.out, "out", "", "")
	fs.StringVar(&keys, "keys", string(compare.KeyHMAC), "")
	fs.IntVar(&o.maxKeys, "max-keys", report.DefaultMaxRecords, "")
	fs.StringVar(&o.checkpoint, "checkpoint", "", "")
	fs.Int64Var(&o.expectedKeys, "expected-keys", 0, "")
	fs.IntVar(&o.concurrency, "concurrency", report.DefaultConcurrency, "")
	fs.IntVar(&o.batch, "batch", report.DefaultBatchSize, "")
	fs.StringVar(&o.progress, "progress", "auto", "")
	fs.DurationVar(&o.progressTick, "progress-every", 0, "")
	fs.BoolVar(&o.repair, "repair", false, "")
	fs.BoolVar(&o.apply, "apply", false, "")
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
	case o.settle < 0:
		return nil, usage("--settle %s: want a duration of 0s or more", o.settle)
	case o.demo && !settleSet:
		o.settle = 0 // the demo's stores change only by its own hand
	}

	cf := cfkv.ConfigFromEnv(getenv) // the flags win
	o.cfAccount = cmp.Or(o.cfAccount, cf.AccountID)
	o.cfNamespace = cmp.Or(o.cfNamespace, cf.NamespaceID)
	o.cfBaseURL = cmp.Or(o.cfBaseURL, cf.BaseURL)
	o.cfToken = cf.APIToken
	o.mongoURI = strings.TrimSpace(getenv(EnvMongoURI))
	// The bot's MongoKVStore opens "miti99bot" whatever its URI says; the
	// report reads what the bot reads. connect warns when the URI names
	// another database.
	o.mongoDB = kvenv.Database(o.mongoDB, getenv)
	o.secret = getenv(EnvSecret)
	if old := getenv(EnvReportSecret); old != "" {
		if o.secret != "" && o.secret != old {
			return nil, usage("%s and %s are both set and differ: keep one (%s, the proxy's), so that hashed keys agree with the proxy's", EnvSecret, EnvReportSecret, EnvSecret)
		}
		o.secret = old
	}

	var err error
	if format == "" {
		format = formatOf(o.out)
	}
	if o.format, err = report.ParseFormat(format); err != nil {
		return nil, usage("--format %q: want table, json, markdown or html", format)
	}
	if o.keys, err = compare.ParseKeyPolicy(keys); err != nil {
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
	case o.apply && !o.repair:
		return nil, usage("--apply needs --repair (a repair is a dry run until --apply)")
	case !slices.Contains([]string{"auto", "always", "lines", "never"}, o.progress):
		return nil, usage("--progress %q: want auto, always, lines or never", o.progress)
	case o.progressTick < 0:
		return nil, usage("--progress-every %s is negative", o.progressTick)
	case o.maxKeys < 0 || o.concurrency < 1 || o.batch < 1 || o.expectedKeys < 0:
		return nil, usage("--max-keys, --concurrency, --batch and --expected-keys take positive numbers")
	case o.batch > 100:
		return nil, usage("--batch %d: Workers KV reads at most 100 keys a request", o.batch)
	case o.cfMaxBulkWrite < 0 || o.cfMaxBulkWrite > 10_000:
		return nil, usage("--cf-max-bulk-write %d: a bulk write takes 1 to 10000 pairs (1000 through a bridge Worker)", o.cfMaxBulkWrite)
	case o.ttlTolerance < 0:
		return nil, usage("--ttl-tolerance %s is negative (0s compares expiries exactly)", o.ttlTolerance)
	}
	o.scope.SampleRate = sample
	if keysFile != "" {
		if o.scope.Keys, err = readKeyList(keysFile); err != nil {
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
