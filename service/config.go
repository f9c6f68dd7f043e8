package service

import (
	"cmp"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/kvshadow/kvshadow/assembly"
	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/internal/kvenv"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
	"github.com/kvshadow/kvshadow/membudget"
)

// The environment variables the service reads besides Cloudflare's (cfkv)
// and OTEL_*; package kvenv's names, as botkv's. Secrets come from the
// environment or a file, never a flag: a flag shows in ps.
const (
	EnvToken      = kvenv.Token      // the clients' token
	EnvAdminToken = kvenv.AdminToken // the admin API's token
	EnvKeySecret  = kvenv.KeySecret  // the HMAC secret of redacted keys
	EnvMongoURI   = kvenv.MongoURI
	EnvMongoDB    = kvenv.MongoDB
)

// Defaults of the flags.
const (
	DefaultListen       = "127.0.0.1:8790"
	DefaultAdminListen  = "127.0.0.1:8791"
	DefaultDrainTimeout = 20 * time.Second
	DefaultGrace        = 10 * time.Second
	DefaultProbe        = 15 * time.Second
	DefaultCompareRate  = 0.05
	// DefaultTeeLease is the lease of a stage answer (the tee's own
	// default), and DefaultTeeInvocation a stage read (1 s) and the
	// longest invocation with its waitUntil (30 s on Cloudflare): with
	// 4 s to spare they make dualwrite.DefaultFenceInterval.
	DefaultTeeLease      = 30 * time.Second
	DefaultTeeInvocation = 31 * time.Second
)

// ErrUsage marks a command line or environment that the service refuses
// before it starts: exit status 2.
var ErrUsage = errors.New("usage")

func usage(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

// Namespace is one served namespace ID and the shadow database of its keys
// ("" means mongokv.DefaultDatabase, the bot's).
type Namespace = assembly.Namespace

// Config is the service's resolved configuration.
type Config struct {
	Listen, AdminListen string
	TLSCert, TLSKey     string
	// AdminTLSCert and AdminTLSKey serve the admin listener with TLS;
	// without them it takes the front's certificate when the front has one.
	AdminTLSCert, AdminTLSKey string
	// PublicURL is where clients reach the front (a tunnel's hostname):
	// what the printed client environment names.
	PublicURL string
	// Unauthenticated serves without tokens, on loopback only.
	Unauthenticated bool

	Account    string
	Namespaces []Namespace
	PrimaryURL string
	ControlDB  string

	// Store is every namespace's dualwrite.Config as the flags set it
	// (--stage, --lanes, --max-settle-keys as MaxDirty, --exclude-prefix...,
	// kv.ReservedPrefix besides); a ConsistencyWindow or FenceInterval of 0
	// means none. Run adds the stores, the memory budget, the redactor and
	// ShadowBudget (ShadowRate).
	Store         dualwrite.Config
	NewPairing    bool // control.Config.NewPairing
	Instance      string
	Poll, Beat    time.Duration
	Probe         time.Duration
	Drain, Grace  time.Duration
	ShutdownDelay time.Duration
	DirtyDir      string
	JournalDir    string

	MaxConcurrent  int
	MemoryBudget   int64 // bytes, the whole process's (membudget)
	MaxPerClient   int   // 0: three quarters of MaxConcurrent
	MinBodyRate    int   // bytes a second; 0: kvapi's default
	MaxConnections int   // per listener
	// TeeLease is how long a tee may trust a stage answer (its lease_ms);
	// TeeInvocation the longest a bot's invocation runs after routing a
	// write. A Store.FenceInterval shorter than both together is refused.
	TeeLease, TeeInvocation time.Duration
	// SweepInterval is how often each shadow database's expired documents
	// and orphaned chunks are swept (mongokv.Store.RunSweeper).
	SweepInterval time.Duration
	// ShadowRate caps the requests a second of dualwrite.Config.ShadowBudget,
	// shared by every namespace; 0 is no cap.
	ShadowRate int

	// ReadTimeout and WriteTimeout are the front's (kvapi.ServeConfig): a
	// request's context ends a tenth of WriteTimeout before it, at most 5 s.
	ReadTimeout, WriteTimeout time.Duration

	Demo bool
	Help bool

	secrets secrets
}

// secrets are never printed, logged or put in an error.
type secrets struct {
	token, admin, cfToken, mongoURI, keySecret string
}

// String keeps the secrets out of any accidental print.
func (s secrets) String() string { return "secrets{redacted}" }

// Parse reads args and the environment (getenv). Its errors wrap ErrUsage,
// or flag.ErrHelp for --help, and quote no secret.
func Parse(args []string, getenv func(string) string) (*Config, error) {
	c := &Config{}
	fs := flag.NewFlagSet("kvshadow-proxy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var namespaces kvenv.List
	var tokenFile, adminFile, cfFile, mongoFile, secretFile, mongoDB, stage string
	fs.StringVar(&c.Listen, "listen", DefaultListen, "")
	fs.StringVar(&c.AdminListen, "admin-listen", DefaultAdminListen, "")
	fs.StringVar(&c.TLSCert, "tls-cert", "", "")
	fs.StringVar(&c.TLSKey, "tls-key", "", "")
	fs.StringVar(&c.AdminTLSCert, "admin-tls-cert", "", "")
	fs.StringVar(&c.AdminTLSKey, "admin-tls-key", "", "")
	fs.StringVar(&c.PublicURL, "public-url", "", "")
	fs.BoolVar(&c.Unauthenticated, "unauthenticated-loopback", false, "")
	fs.StringVar(&c.Account, "account", "", "")
	fs.Var(&namespaces, "namespace", "")
	fs.StringVar(&c.PrimaryURL, "primary-url", "", "")
	fs.StringVar(&mongoDB, "mongo-db", "", "")
	fs.StringVar(&c.ControlDB, "control-db", "", "")
	fs.StringVar(&tokenFile, "token-file", "", "")
	fs.StringVar(&adminFile, "admin-token-file", "", "")
	fs.StringVar(&cfFile, "cf-token-file", "", "")
	fs.StringVar(&mongoFile, "mongo-uri-file", "", "")
	fs.StringVar(&secretFile, "key-secret-file", "", "")
	fs.StringVar(&stage, "stage", "", "")
	fs.BoolVar(&c.NewPairing, "new-pairing", false, "")
	fs.StringVar(&c.Instance, "instance", "", "")
	fs.DurationVar(&c.Poll, "poll-interval", control.DefaultPollInterval, "")
	fs.DurationVar(&c.Beat, "heartbeat-interval", control.DefaultHeartbeatInterval, "")
	fs.DurationVar(&c.Probe, "probe-interval", DefaultProbe, "")
	fs.DurationVar(&c.Drain, "drain-timeout", DefaultDrainTimeout, "")
	fs.DurationVar(&c.Grace, "shutdown-grace", DefaultGrace, "")
	fs.DurationVar(&c.ShutdownDelay, "shutdown-delay", 0, "")
	fs.StringVar(&c.DirtyDir, "dirty-dir", "", "")
	fs.StringVar(&c.JournalDir, "journal-dir", "", "")
	fs.IntVar(&c.MaxConcurrent, "max-concurrent", kvapi.DefaultMaxConcurrent, "")
	memBudget := fmt.Sprintf("%dMiB", membudget.DefaultLimit>>20)
	fs.StringVar(&memBudget, "memory-budget", memBudget, "")
	fs.IntVar(&c.MaxPerClient, "max-per-client", 0, "")
	fs.IntVar(&c.MinBodyRate, "min-body-rate", kvapi.DefaultMinBodyRate, "")
	fs.IntVar(&c.MaxConnections, "max-connections", kvapi.DefaultMaxConnections, "")
	fs.DurationVar(&c.ReadTimeout, "read-timeout", kvapi.DefaultReadTimeout, "")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", kvapi.DefaultWriteTimeout, "")
	fs.IntVar(&c.Store.Lanes, "lanes", dualwrite.DefaultLanes, "")
	fs.IntVar(&c.Store.LaneDepth, "lane-depth", dualwrite.DefaultLaneDepth, "")
	fs.DurationVar(&c.Store.ShadowTimeout, "shadow-timeout", dualwrite.DefaultShadowTimeout, "")
	fs.Float64Var(&c.Store.CompareRate, "compare-rate", DefaultCompareRate, "")
	fs.DurationVar(&c.Store.ConsistencyWindow, "consistency-window", dualwrite.DefaultConsistencyWindow, "")
	fs.DurationVar(&c.Store.FenceInterval, "fence-interval", dualwrite.DefaultFenceInterval, "")
	fs.DurationVar(&c.TeeLease, "tee-lease", DefaultTeeLease, "")
	fs.DurationVar(&c.TeeInvocation, "tee-invocation", DefaultTeeInvocation, "")
	fs.DurationVar(&c.Store.IngestMaxAge, "ingest-max-age", dualwrite.DefaultIngestMaxAge, "")
	fs.DurationVar(&c.Store.IngestMaxLead, "ingest-max-lead", dualwrite.DefaultIngestMaxLead, "")
	fs.DurationVar(&c.Store.RepairInterval, "repair-interval", dualwrite.DefaultRepairInterval, "")
	fs.DurationVar(&c.SweepInterval, "sweep-interval", mongokv.DefaultSweepInterval, "")
	fs.IntVar(&c.Store.MaxDirty, "max-settle-keys", dualwrite.DefaultMaxDirty, "")
	fs.IntVar(&c.Store.Breaker.FailuresToOpen, "breaker-failures", dualwrite.DefaultFailuresToOpen, "")
	fs.DurationVar(&c.Store.Breaker.OpenTimeout, "breaker-open-timeout", dualwrite.DefaultOpenTimeout, "")
	fs.Var((*kvenv.List)(&c.Store.ExcludePrefixes), "exclude-prefix", "")
	fs.IntVar(&c.ShadowRate, "shadow-rate", 0, "")
	fs.BoolVar(&c.Demo, "demo", false, "")
	fs.BoolVar(&c.Help, "help", false, "")
	fs.BoolVar(&c.Help, "h", false, "")
	if err := fs.Parse(args); err != nil {
		return nil, usage("%v", err)
	}
	if c.Help {
		return c, flag.ErrHelp
	}
	if fs.NArg() > 0 {
		return nil, usage("unexpected argument %q (every option is a flag)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	var err error
	if c.MemoryBudget, err = membudget.ParseSize(memBudget); err != nil {
		return nil, usage("--memory-budget: %v", err)
	}
	if _, err := membudget.New(membudget.Config{Limit: c.MemoryBudget}); err != nil {
		return nil, usage("--memory-budget: %v", err)
	}
	if c.Store.Stage, err = parseStage(stage, c.Demo); err != nil {
		return nil, err
	}
	if err := c.checkNumbers(); err != nil {
		return nil, err
	}
	if _, err := kv.NewExclusions(c.Store.ExcludePrefixes); err != nil {
		return nil, usage("--exclude-prefix: %v", err)
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" {
			return nil, usage("--public-url: want the http(s) origin clients reach, without credentials or a query, such as https://kv.example.com")
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return nil, usage("--tls-cert and --tls-key go together")
	}
	if (c.AdminTLSCert == "") != (c.AdminTLSKey == "") {
		return nil, usage("--admin-tls-cert and --admin-tls-key go together")
	}
	if c.Demo {
		return c, c.demoDefaults(set, namespaces)
	}

	cf := cfkv.ConfigFromEnv(getenv) // the flags win; its APIToken is read as a secret below
	c.Account = cmp.Or(c.Account, cf.AccountID)
	c.PrimaryURL = cmp.Or(c.PrimaryURL, cf.BaseURL)
	if len(namespaces) == 0 {
		namespaces.Set(cf.NamespaceID)
	}
	// The bot's MongoKVStore opens "miti99bot" whatever its URI says; the
	// proxy follows it, so that a URI the two share (an Atlas one ending in
	// /test) cannot split them into two databases. OpenBackends warns when
	// the URI names another.
	mongoDB = kvenv.Database(mongoDB, getenv)
	read := func(file, name string, dst *string) {
		if err != nil {
			return
		}
		*dst, err = kvenv.Secret(file, name, getenv)
	}
	read(tokenFile, EnvToken, &c.secrets.token)
	read(adminFile, EnvAdminToken, &c.secrets.admin)
	read(cfFile, cfkv.EnvAPIToken, &c.secrets.cfToken)
	read(mongoFile, EnvMongoURI, &c.secrets.mongoURI)
	read(secretFile, EnvKeySecret, &c.secrets.keySecret)
	if err != nil {
		return nil, usage("%v", err)
	}
	if c.Namespaces, err = parseNamespaces(namespaces, mongoDB); err != nil {
		return nil, err
	}
	if missing := kvenv.Missing(map[string]string{
		cfkv.EnvAccountID + " (or --account)":               c.Account,
		cfkv.EnvNamespaceID + " (or --namespace)":           strings.Join(namespaces, ","),
		cfkv.EnvAPIToken + " (or --cf-token-file)":          c.secrets.cfToken,
		EnvMongoURI + " (or --mongo-uri-file)":              c.secrets.mongoURI,
		EnvToken + " (or --token-file), the clients' token": orIf(c.Unauthenticated, c.secrets.token),
		EnvAdminToken + " (or --admin-token-file)":          orIf(c.Unauthenticated, c.secrets.admin),
	}); missing != "" {
		return nil, usage("missing %s; or try --demo, which needs no account", missing)
	}
	if err := checkMongoURI(c.secrets.mongoURI); err != nil {
		return nil, err
	}
	if c.Unauthenticated {
		if err := loopbackOnly(c.Listen, c.AdminListen); err != nil {
			return nil, err
		}
		if c.secrets.token != "" || c.secrets.admin != "" {
			return nil, usage("--unauthenticated-loopback and a token (%s or %s) contradict each other", EnvToken, EnvAdminToken)
		}
	}
	for name, tok := range map[string]string{EnvToken: c.secrets.token, EnvAdminToken: c.secrets.admin} {
		if tok != "" && kvapi.CheckToken(tok) != nil {
			return nil, usage("%s holds characters a bearer token cannot carry (a client could never send it): use letters, digits and -._~+/ (then = padding)", name)
		}
	}
	if c.secrets.token != "" && c.secrets.token == c.secrets.admin {
		return nil, usage("%s and %s must differ: a client must not be able to change the stage", EnvToken, EnvAdminToken)
	}
	if c.Instance == "" {
		_, port, _ := net.SplitHostPort(c.AdminListen)
		c.Instance = kvenv.Instance("kvshadow-proxy", port)
	}
	return c, nil
}

// ids are the served namespaces' IDs, in order.
func (c *Config) ids() []string {
	ids := make([]string, len(c.Namespaces))
	for i, ns := range c.Namespaces {
		ids[i] = ns.ID
	}
	return ids
}

// checkMongoURI refuses a MONGODB_URI that is no connection string (a
// "mongo://" typo), before any connect, without quoting it: it may hold a
// password.
func checkMongoURI(uri string) error {
	if !strings.HasPrefix(uri, "mongodb://") && !strings.HasPrefix(uri, "mongodb+srv://") {
		return usage("%s (or --mongo-uri-file) is not a MongoDB connection string: it must start with mongodb:// or mongodb+srv://", EnvMongoURI)
	}
	// A mongodb+srv URI is checked at connect: reading it looks its hosts
	// up in DNS, which a bad environment is not.
	if strings.HasPrefix(uri, "mongodb://") && options.Client().ApplyURI(uri).Validate() != nil {
		return usage("%s (or --mongo-uri-file) is not a valid MongoDB connection string (its hosts, options or escaping); it is not quoted here since it may hold a password", EnvMongoURI)
	}
	return nil
}

// orIf stands in a value for a token the operator chose to go without.
func orIf(waived bool, v string) string {
	if waived {
		return "waived"
	}
	return v
}

func parseStage(name string, demo bool) (dualwrite.Stage, error) {
	if name == "" {
		if demo {
			return dualwrite.Shadow, nil
		}
		return dualwrite.Off, nil
	}
	s, err := dualwrite.ParseStage(name)
	if err != nil {
		return 0, usage("--stage %q: want one of %s", name, dualwrite.StageNames())
	}
	return s, nil
}

func (c *Config) checkNumbers() error {
	switch {
	case c.Store.Lanes < 1 || c.Store.LaneDepth < 1 || c.MaxConcurrent < 1 || c.Store.Breaker.FailuresToOpen < 1 || c.MaxConnections < 1:
		return usage("--lanes, --lane-depth, --max-concurrent, --max-connections and --breaker-failures take positive numbers")
	case c.MaxPerClient < 0 || c.MaxPerClient > c.MaxConcurrent:
		return usage("--max-per-client %d: want 1..--max-concurrent (%d), or 0 for three quarters of it", c.MaxPerClient, c.MaxConcurrent)
	case c.MinBodyRate < 1:
		return usage("--min-body-rate takes a positive number of bytes a second")
	case c.Store.Breaker.OpenTimeout <= 0:
		return usage("--breaker-open-timeout takes a positive duration")
	case !(c.Store.CompareRate >= 0 && c.Store.CompareRate <= 1):
		return usage("--compare-rate %g: want a fraction 0..1, such as 0.05 for 5%%", c.Store.CompareRate)
	case c.ShadowRate < 0:
		return usage("--shadow-rate %d: want requests a second to MongoDB, such as 80 for an Atlas M0, or 0 for no cap", c.ShadowRate)
	case c.Store.MaxDirty < 1:
		return usage("--max-settle-keys %d: the settle set holds at least one key", c.Store.MaxDirty)
	case c.Poll <= 0 || c.Beat <= 0 || c.Probe <= 0 || c.Store.ShadowTimeout <= 0 || c.Store.RepairInterval <= 0 || c.SweepInterval <= 0:
		return usage("--poll-interval, --heartbeat-interval, --probe-interval, --shadow-timeout, --repair-interval and --sweep-interval take positive durations")
	case c.ReadTimeout <= 0 || c.WriteTimeout <= 0:
		return usage("--read-timeout and --write-timeout take positive durations")
	case c.Drain < 0 || c.Grace < 0 || c.ShutdownDelay < 0 || c.Store.ConsistencyWindow < 0 || c.Store.FenceInterval < 0:
		return usage("--drain-timeout, --shutdown-grace, --shutdown-delay, --consistency-window and --fence-interval must not be negative")
	case c.TeeLease <= 0 || c.TeeInvocation <= 0:
		return usage("--tee-lease and --tee-invocation take positive durations")
	case c.Store.FenceInterval > 0 && c.Store.FenceInterval < c.TeeLease+c.TeeInvocation:
		return usage("--fence-interval %s is shorter than --tee-lease %s + --tee-invocation %s: an isolate could still write its binding after the flip; raise --fence-interval or lower --tee-lease",
			c.Store.FenceInterval, c.TeeLease, c.TeeInvocation)
	case c.Store.IngestMaxAge <= 0 || c.Store.IngestMaxLead <= 0:
		return usage("--ingest-max-age and --ingest-max-lead must be positive")
	}
	return nil
}

// parseNamespaces reads "id" or "id=database" items; namespaces must not
// share a database, where their keys would mix.
func parseNamespaces(items []string, db string) ([]Namespace, error) {
	var out []Namespace
	seen, dbs := map[string]bool{}, map[string]string{}
	for _, it := range items {
		id, database, _ := strings.Cut(it, "=")
		id, database = strings.TrimSpace(id), cmp.Or(strings.TrimSpace(database), db)
		if seen[id] {
			return nil, usage("--namespace %q is given twice", id)
		}
		seen[id] = true
		if other, ok := dbs[database]; ok {
			return nil, usage("namespaces %q and %q would share the database %q: give each its own with --namespace ID=DATABASE", other, id, database)
		}
		dbs[database] = id
		out = append(out, Namespace{ID: id, Database: database})
	}
	return out, nil
}

// loopbackOnly refuses an address reachable from elsewhere.
func loopbackOnly(addrs ...string) error {
	for _, addr := range addrs {
		if !kvapi.IsLoopback(addr) {
			return usage("address %q: without tokens the service listens on loopback only (127.0.0.1, ::1 or localhost)", addr)
		}
	}
	return nil
}

// The demo's names.
const (
	DemoAccount   = "demo-account"
	DemoNamespace = "demo-kv"
)

// demoDefaults configures the demo: loopback, an emulated account, tokens
// drawn for this run (printed: they guard a throwaway in-memory service).
func (c *Config) demoDefaults(set map[string]bool, namespaces []string) error {
	if err := loopbackOnly(c.Listen, c.AdminListen); err != nil {
		return err
	}
	c.Account = cmp.Or(c.Account, DemoAccount)
	if len(namespaces) == 0 {
		namespaces = []string{DemoNamespace}
	}
	var err error
	if c.Namespaces, err = parseNamespaces(namespaces, ""); err != nil {
		return err
	}
	for i := range c.Namespaces {
		c.Namespaces[i].Database = "demo_" + strings.ReplaceAll(c.Namespaces[i].ID, "-", "_")
	}
	if !c.Unauthenticated {
		c.secrets.token, c.secrets.admin = randomToken("demo-client-"), randomToken("demo-admin-")
	}
	c.secrets.cfToken = randomToken("demo-primary-")
	if !set["consistency-window"] {
		c.Store.ConsistencyWindow = time.Second // the emulator reads its own writes at once
	}
	if !set["compare-rate"] {
		c.Store.CompareRate = 1
	}
	c.Instance = cmp.Or(c.Instance, "demo")
	return nil
}

func randomToken(prefix string) string {
	return prefix + rand.Text()
}
