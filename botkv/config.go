package botkv

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/assembly"
	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/internal/kvenv"
)

// The variables Open reads besides those kvshadow-proxy reads too
// (cfkv.EnvAccountID, EnvNamespaceID, EnvAPIToken, EnvBaseURL, and
// EnvMongoURI, EnvMongoDB, EnvKeySecret): each stands for the proxy's flag
// of the same name (--stage, --instance, --journal-dir,
// --consistency-window, --compare-rate, --breaker-open-timeout), with its
// default and meaning.
const (
	EnvMongoURI          = kvenv.MongoURI
	EnvMongoDB           = kvenv.MongoDB
	EnvKeySecret         = kvenv.KeySecret
	EnvStage             = "KVSHADOW_STAGE"
	EnvInstance          = "KVSHADOW_INSTANCE"
	EnvJournalDir        = "KVSHADOW_JOURNAL_DIR"
	EnvConsistencyWindow = "KVSHADOW_CONSISTENCY_WINDOW"
	EnvCompareRate       = "KVSHADOW_COMPARE_RATE"
	EnvBreakerOpen       = "KVSHADOW_BREAKER_OPEN_TIMEOUT"
)

// DefaultCompareRate is the share of keys whose reads are compared in the
// shadow, handover and live stages: kvshadow-proxy's default.
const DefaultCompareRate = 0.05

// ErrConfig matches every error Open returns for the environment or the
// Config: a *VarError names the variable.
var ErrConfig = errors.New("botkv: invalid configuration")

// ErrMongoDBDown matches Open's error when MongoDB does not answer at start
// and the bot has no stage it may run without it (see the package doc). The
// message says why and what to do.
var ErrMongoDBDown = assembly.ErrMongoDBDown

// VarError is a variable (or the file that holds it) that Open refused.
// Its message names the variable and never quotes a secret.
type VarError struct {
	Name    string // the variable, such as MONGODB_DB
	Problem string
}

func (e *VarError) Error() string { return "botkv: " + e.Name + ": " + e.Problem }

// Is makes a VarError match ErrConfig.
func (e *VarError) Is(target error) bool { return target == ErrConfig }

// Config is what the environment does not say. The zero value reads the
// process's environment.
type Config struct {
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// CFTokenFile, MongoURIFile and KeySecretFile name files that hold
	// CLOUDFLARE_API_TOKEN, MONGODB_URI and KVSHADOW_KEY_SECRET, as
	// kvshadow-proxy's --cf-token-file, --mongo-uri-file and
	// --key-secret-file do; a file given is read instead of the variable.
	CFTokenFile, MongoURIFile, KeySecretFile string
}

// settings are a Config and its environment, checked.
type settings struct {
	primary    cfkv.Config
	mongoURI   string
	database   string
	keySecret  string
	instance   string
	journalDir string
	// store is the dual-write store's Stage, ConsistencyWindow, CompareRate
	// and Breaker.OpenTimeout, as the environment sets them.
	store dualwrite.Config
}

// read resolves and checks cfg's environment, with no I/O but the files
// it names. Every problem found is in the error, each a *VarError.
func (cfg Config) read() (settings, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	env := func(name string) string { return strings.TrimSpace(getenv(name)) }
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, &VarError{Name: name, Problem: fmt.Sprintf(format, args...)})
	}
	s := settings{
		primary:  cfkv.ConfigFromEnv(getenv), // its APIToken replaced by the secret below
		database: kvenv.Database("", getenv),
		instance: env(EnvInstance), journalDir: env(EnvJournalDir),
		store: dualwrite.Config{ConsistencyWindow: dualwrite.DefaultConsistencyWindow, CompareRate: DefaultCompareRate},
	}
	secret := func(file, name string, dst *string) (err error) {
		if *dst, err = kvenv.Secret(file, name, getenv); err != nil {
			bad(name, "%v", err)
		}
		return err
	}
	if err := mongokv.CheckDatabase(s.database); err != nil {
		bad(EnvMongoDB, "%q: %v", s.database, err)
	}
	tokenErr := secret(cfg.CFTokenFile, cfkv.EnvAPIToken, &s.primary.APIToken)
	if secret(cfg.MongoURIFile, EnvMongoURI, &s.mongoURI) == nil && s.mongoURI == "" {
		bad(EnvMongoURI, "not set")
	}
	secret(cfg.KeySecretFile, EnvKeySecret, &s.keySecret) // optional
	for _, p := range s.primary.Check() {                 // the token's file said already
		if p.Var != cfkv.EnvAPIToken || tokenErr == nil {
			bad(p.Var, "%s", p.Text)
		}
	}
	if v := env(EnvStage); v != "" {
		st, err := dualwrite.ParseStage(v)
		if err != nil {
			bad(EnvStage, "%q: want one of %s", v, dualwrite.StageNames())
		}
		s.store.Stage = st
	}
	if v := env(EnvConsistencyWindow); v != "" {
		d, err := time.ParseDuration(v)
		switch {
		case err != nil || d < 0:
			bad(EnvConsistencyWindow, "%q: want a duration such as 60s, or 0 for none (stores that read their own writes at once)", v)
		case d == 0:
			s.store.ConsistencyWindow = -1 // dualwrite's "none"
		default:
			s.store.ConsistencyWindow = d
		}
	}
	if v := env(EnvCompareRate); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || !(r >= 0 && r <= 1) {
			bad(EnvCompareRate, "%q: want a fraction 0..1, such as 0.05 for 5%%", v)
		}
		s.store.CompareRate = r
	}
	if v := env(EnvBreakerOpen); v != "" {
		if s.store.Breaker.OpenTimeout, _ = time.ParseDuration(v); s.store.Breaker.OpenTimeout <= 0 {
			bad(EnvBreakerOpen, "%q: want a positive duration such as 30s", v)
		}
	}
	if s.instance == "" {
		s.instance = kvenv.Instance("bot", "")
	}
	return s, errors.Join(errs...)
}
