package cfkv

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
)

// The environment variables ConfigFromEnv reads. The first, second and last
// are the names Cloudflare's own tools use.
const (
	EnvAccountID   = "CLOUDFLARE_ACCOUNT_ID"
	EnvAPIToken    = "CLOUDFLARE_API_TOKEN"
	EnvNamespaceID = "CLOUDFLARE_KV_NAMESPACE_ID"
	EnvBaseURL     = "CLOUDFLARE_BASE_URL"
	// EnvAPIBaseURL is wrangler's name for the API root, which it wants
	// without a trailing slash (with one it asks for "//accounts").
	EnvAPIBaseURL = "CLOUDFLARE_API_BASE_URL"
)

// ClientEnv is the environment a Workers KV client needs to reach the API
// root base (".../client/v4/") for account and namespace, as shell
// assignments: wrangler's CLOUDFLARE_API_BASE_URL without the trailing
// slash, and CLOUDFLARE_BASE_URL, which cloudflare-go, ConfigFromEnv and
// shadow-report read. No token: the caller says where it comes from.
func ClientEnv(base, account, namespace string) string {
	root := strings.TrimSuffix(base, "/")
	return fmt.Sprintf("%s=%s %s=%s %s=%s %s=%s", EnvAPIBaseURL, root, EnvBaseURL, root+"/",
		EnvAccountID, account, EnvNamespaceID, namespace)
}

// The defaults of the zero Config.
const (
	DefaultBaseURL        = "https://api.cloudflare.com/client/v4/"
	DefaultMaxRetries     = 3
	DefaultRetryBackoff   = 250 * time.Millisecond
	DefaultMaxRetryWait   = 2 * time.Second
	DefaultRequestTimeout = 30 * time.Second
)

// Config configures a Store. Zero values mean the documented defaults. It
// formats itself without the API token (json.Marshal skips it too).
type Config struct {
	// AccountID and NamespaceID name the namespace; both are required.
	AccountID   string
	NamespaceID string
	// APIToken is a Cloudflare API token with Workers KV Storage
	// permissions; required.
	APIToken string `json:"-"`
	// BaseURL is the API root, DefaultBaseURL when empty; point it at the
	// kvapi emulator, a proxy or a regional endpoint.
	BaseURL string
	// MaxRetries is how many times a request refused with 429 or 5xx, or
	// that failed to connect, is tried again: 0 means DefaultMaxRetries, a
	// negative number none.
	MaxRetries int
	// RetryBackoff is the wait before the first retry, doubling after each
	// one, with jitter; 0 means DefaultRetryBackoff.
	RetryBackoff time.Duration
	// MaxRetryWait caps every wait between tries; 0 means
	// DefaultMaxRetryWait. A Retry-After longer than it is not waited out:
	// the call fails at once with kv.ErrUnavailable carrying that delay.
	// So a call lasts at most about (MaxRetries+1) x RequestTimeout plus
	// MaxRetries x MaxRetryWait.
	MaxRetryWait time.Duration
	// RequestTimeout bounds each try; 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxBulkWrite is the most pairs one bulk write, or keys one bulk
	// delete, sends in a request, 1..10,000; 0 means the API's 10,000. A
	// bridge Worker writes through its binding, which allows 1,000 KV
	// operations per invocation: set 1,000 there, or its unwritten keys
	// come back as unsuccessful and cost a retry each batch.
	MaxBulkWrite int
	// HTTPClient sends the requests; nil means a client of this package's
	// own, with keep-alive connections sized for concurrent callers.
	HTTPClient *http.Client `json:"-"`
	// Clock validates absolute expirations and times the retries; nil is
	// the system clock.
	Clock clock.Clock `json:"-"`
}

// ErrConfig reports a Config that New refuses.
var ErrConfig = errors.New("cfkv: invalid config")

// ConfigFromEnv returns a Config filled from EnvAccountID, EnvAPIToken,
// EnvNamespaceID and EnvBaseURL, read with getenv (nil means os.Getenv).
func ConfigFromEnv(getenv func(string) string) Config {
	if getenv == nil {
		getenv = os.Getenv
	}
	return Config{
		AccountID:   strings.TrimSpace(getenv(EnvAccountID)),
		NamespaceID: strings.TrimSpace(getenv(EnvNamespaceID)),
		APIToken:    strings.TrimSpace(getenv(EnvAPIToken)),
		BaseURL:     strings.TrimSpace(getenv(EnvBaseURL)),
	}
}

// Problem is a setting of a Config that New refuses, named by the
// variable ConfigFromEnv reads it from; Text never quotes the token.
type Problem struct{ Var, Text string }

// Check returns what is wrong with c's account, namespace, token and base
// URL (empty: DefaultBaseURL), what New refuses of them.
func (c Config) Check() []Problem {
	var ps []Problem
	for _, id := range []Problem{{EnvAccountID, c.AccountID}, {EnvNamespaceID, c.NamespaceID}} {
		switch {
		case id.Text == "":
			ps = append(ps, Problem{id.Var, "not set"})
		case id.Var == EnvNamespaceID && strings.Contains(id.Text, ","):
			ps = append(ps, Problem{id.Var, fmt.Sprintf("%q names several namespaces: a store has one", id.Text)})
		case !kv.IsID(id.Text):
			ps = append(ps, Problem{id.Var, fmt.Sprintf("%q is not an ID: want %s", id.Text, kv.IDForm)})
		}
	}
	switch {
	case c.APIToken == "":
		ps = append(ps, Problem{EnvAPIToken, "not set"})
	case strings.ContainsFunc(c.APIToken, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		ps = append(ps, Problem{EnvAPIToken, "holds whitespace or control characters"})
	}
	if u, err := url.Parse(cmp.Or(c.BaseURL, DefaultBaseURL)); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		ps = append(ps, Problem{EnvBaseURL, "want the API root, an absolute http(s) URL without credentials, such as " + DefaultBaseURL + " (or an emulator's)"})
	}
	return ps
}

// withDefaults checks c and fills in its defaults. Its errors name fields,
// never the token's value.
func (c Config) withDefaults() (Config, error) {
	var problems []string
	for _, p := range c.Check() {
		problems = append(problems, p.Var+": "+p.Text)
	}
	c.BaseURL = cmp.Or(c.BaseURL, DefaultBaseURL)
	if !strings.HasSuffix(c.BaseURL, "/") {
		c.BaseURL += "/"
	}
	for name, d := range map[string]time.Duration{"RetryBackoff": c.RetryBackoff, "MaxRetryWait": c.MaxRetryWait, "RequestTimeout": c.RequestTimeout} {
		if d < 0 {
			problems = append(problems, name+" is negative")
		}
	}
	if c.MaxBulkWrite < 0 || c.MaxBulkWrite > maxBulkWrite {
		problems = append(problems, fmt.Sprintf("MaxBulkWrite %d is outside 1..%d (0 for the default)", c.MaxBulkWrite, maxBulkWrite))
	}
	if len(problems) > 0 {
		return Config{}, fmt.Errorf("%w: %s", ErrConfig, strings.Join(problems, "; "))
	}
	c.MaxBulkWrite = cmp.Or(c.MaxBulkWrite, maxBulkWrite)
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	c.RetryBackoff = cmp.Or(c.RetryBackoff, DefaultRetryBackoff)
	c.MaxRetryWait = cmp.Or(c.MaxRetryWait, DefaultMaxRetryWait)
	c.RequestTimeout = cmp.Or(c.RequestTimeout, DefaultRequestTimeout)
	c.Clock = clock.OrReal(c.Clock)
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Transport: NewTransport()}
	}
	return c, nil
}

// String describes c without the token.
func (c Config) String() string {
	token := "unset"
	if c.APIToken != "" {
		token = "set"
	}
	return fmt.Sprintf("cfkv.Config{AccountID: %q, NamespaceID: %q, APIToken: %s, BaseURL: %q, MaxRetries: %d, RetryBackoff: %s, MaxRetryWait: %s, RequestTimeout: %s, MaxBulkWrite: %d}",
		c.AccountID, c.NamespaceID, token, c.BaseURL, c.MaxRetries, c.RetryBackoff, c.MaxRetryWait, c.RequestTimeout, c.MaxBulkWrite)
}

// Format makes every verb (%v, %+v, %#v, %s, %q, %x...) print String's
// redacted form.
func (c Config) Format(f fmt.State, verb rune) { _, _ = fmt.Fprint(f, c.String()) }

// LogValue makes slog record c without the token.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }
