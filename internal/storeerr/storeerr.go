package storeerr

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/kv"
)

// WorkersKV words a failed Workers KV request (or one of an API that speaks
// it, such as a bridge Worker): the API's own refusal with Cloudflare's code
// and the setting to check, or why it could not be reached.
func WorkersKV(err error) string {
	var api *cfkv.APIError
	if errors.As(err, &api) {
		msg := fmt.Sprintf("refused, HTTP %d", api.Status)
		if api.Code != 0 {
			msg += fmt.Sprintf(", code %d", api.Code)
		}
		if api.Message != "" {
			msg += ": " + api.Message
		}
		return msg + workersKVHint(api)
	}
	if errors.Is(err, kv.ErrUnavailable) {
		return "unreachable (" + NetCause(err.Error(), "no answer") + ")"
	}
	return NetCause(err.Error(), mongokv.ShortTopology(err.Error()))
}

// workersKVHint names the setting a refusal points at.
func workersKVHint(api *cfkv.APIError) string {
	switch s := workersKVSetting(api); s {
	case cfkv.EnvNamespaceID:
		return " (check " + s + ": the namespace does not exist in this account)"
	case cfkv.EnvAPIToken:
		return " (check " + s + ": it needs Workers KV Storage read, and edit to write or repair)"
	case "":
		return ""
	default:
		return " (check " + s + ")"
	}
}

func workersKVSetting(api *cfkv.APIError) string {
	switch {
	case api.Code == 7003 || api.Code == 7000:
		return cfkv.EnvAccountID
	case api.Code == 10013 || api.Status == 404:
		return cfkv.EnvNamespaceID
	case api.Status == 401 || api.Status == 403 || api.Code == 10000 || api.Code == 9106 || api.Code == 6003:
		return cfkv.EnvAPIToken
	}
	return ""
}

// Setting is the variable a refusal (Refused) points at: one of
// Cloudflare's, or MONGODB_URI; "" for any other error.
func Setting(err error) string {
	var api *cfkv.APIError
	switch {
	case errors.As(err, &api):
		return workersKVSetting(api)
	case err != nil && mongoAuth(err.Error()):
		return "MONGODB_URI"
	}
	return ""
}

// Refused reports whether err is a refusal of the settings themselves (the
// account, the namespace, the token, MongoDB's credentials), which no retry
// mends, as opposed to a store that cannot be reached.
func Refused(err error) bool {
	if err == nil {
		return false
	}
	var api *cfkv.APIError
	if errors.As(err, &api) {
		return workersKVHint(api) != ""
	}
	return mongoAuth(err.Error())
}

// MongoDB words a failed MongoDB connect or operation.
func MongoDB(err error) string {
	msg := err.Error()
	switch {
	case mongoAuth(msg):
		return "authentication failed (check the user and password in MONGODB_URI)"
	case errors.Is(err, kv.ErrUnavailable):
		return "unreachable (" + NetCause(msg, "no server answered before the server selection timeout") + ")"
	}
	return NetCause(msg, "cannot connect (check MONGODB_URI)")
}

// MongoRead words a failed MongoDB read after a connect that worked: as
// MongoDB does, except that a cause it cannot name is the read's, not the
// connect's.
func MongoRead(err error) string {
	if msg := err.Error(); !mongoAuth(msg) && !errors.Is(err, kv.ErrUnavailable) {
		return NetCause(msg, "the read failed")
	}
	return MongoDB(err)
}

func mongoAuth(msg string) bool {
	return strings.Contains(msg, "AuthenticationFailed") || strings.Contains(msg, "auth error") || strings.Contains(msg, "authentication failed")
}

// NetCause picks the network cause out of an error's text (the driver keeps
// it only inside its topology description), or returns otherwise.
func NetCause(msg, otherwise string) string {
	for _, c := range []struct{ in, says string }{
		{"connection refused", "connection refused: nothing listens there"},
		{"no such host", "no such host"},
		{"i/o timeout", "timed out"},
		{"deadline exceeded", "timed out"},
		{"no answer within", "timed out"},
		{"x509", "TLS certificate refused"},
		{"tls:", "TLS handshake failed"},
		{"connection reset", "connection reset"},
		{"incomplete read", "the connection closed mid-answer"},
	} {
		if strings.Contains(msg, c.in) {
			return c.says
		}
	}
	return otherwise
}

// AtHost is " at HOST" for an API root, or "" for none (Cloudflare's).
func AtHost(base string) string {
	if base == "" {
		return ""
	}
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		return " at " + u.Host
	}
	return ""
}

// MongoHosts is the host list of a MongoDB URI without its credentials,
// path or options.
func MongoHosts(uri string) string {
	_, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return "the URI in MONGODB_URI"
	}
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		rest = rest[i+1:]
	}
	return rest
}
