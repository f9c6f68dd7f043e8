// Package kvenv holds what kvshadow's programs read from the environment in
// common: the names of the variables and the rules that resolve them, so
// that kvshadow-proxy (package service) and a Go bot's constructor (package
// botkv) read one set of names the same way, and List, the repeatable flag
// of kvshadow-proxy and shadow-report. Cloudflare's variables are cfkv's
// (cfkv.EnvAccountID and the rest).
package kvenv

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/kvshadow/kvshadow/backends/mongokv"
)

// The variables. Secrets come from the environment or a file, never a
// flag: a flag shows in ps.
const (
	MongoURI   = "MONGODB_URI"          // the shadow's connection string (a secret)
	MongoDB    = "MONGODB_DB"           // the shadow database
	KeySecret  = "KVSHADOW_KEY_SECRET"  // the HMAC secret of redacted keys (a secret)
	Token      = "KVSHADOW_TOKEN"       // kvshadow-proxy's clients' token (a secret)
	AdminToken = "KVSHADOW_ADMIN_TOKEN" // kvshadow-proxy's admin API's token (a secret)
)

// Database is the shadow database: given (a flag's) when set, else
// MONGODB_DB's, else mongokv.DefaultDatabase, "miti99bot". The bot's
// MongoKVStore opens "miti99bot" whatever its URI says; kvshadow follows
// it, so that a URI the two share (an Atlas one ending in /test) cannot
// split them into two databases.
func Database(given string, getenv func(string) string) string {
	if given = strings.TrimSpace(given); given != "" {
		return given
	}
	if db := strings.TrimSpace(getenv(MongoDB)); db != "" {
		return db
	}
	return mongokv.DefaultDatabase
}

// Secret reads the secret name from file when file is given (trimmed; an
// empty file is refused), else from the environment. Its errors name the
// variable, never the value.
func Secret(file, name string, getenv func(string) string) (string, error) {
	if file == "" {
		return strings.TrimSpace(getenv(name)), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("reading the file that holds %s: %v", name, errors.Unwrap(err))
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("the file that holds %s is empty", name)
	}
	return v, nil
}

// Instance is a name for this process unique among its machine's: the
// host's name (fallback when it has none) and port, or the process ID
// when port is "" or "0".
func Instance(fallback, port string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = fallback
	}
	if port == "" || port == "0" {
		port = strconv.Itoa(os.Getpid())
	}
	return host + ":" + port
}

// Missing names the settings whose value is "", sorted and
// comma-separated; "" when none is.
func Missing(settings map[string]string) string {
	var missing []string
	for name, v := range settings {
		if v == "" {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	return strings.Join(missing, ", ")
}

// List is a repeatable flag whose values may also be comma-separated:
// --module wordle --module trading, or --module wordle,trading.
type List []string

func (l *List) String() string { return strings.Join(*l, ",") }

// Set adds v's comma-separated items, trimmed; empty ones are dropped.
func (l *List) Set(v string) error {
	for p := range strings.SplitSeq(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}
