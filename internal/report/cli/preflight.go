package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/kv"
)

// storesError is every problem the preflight found, one line each.
type storesError struct{ problems []string }

func (e *storesError) Error() string { return strings.Join(e.problems, "\n") }

// preflight checks both stores at once before the scan, so that a wrong
// account is not hidden behind an unreachable MongoDB, and words each
// problem in one line: what failed, the likely cause, what to check. The
// check costs one Workers KV request, which it returns so that the report
// counts it: a small list, or, for a key list (which promises no listing),
// a read of its first key.
func preflight(ctx context.Context, o *options, primary kv.Store, connectShadow func(context.Context) error) (report.Requests, error) {
	var cfErr, mongoErr error
	var spent report.Requests
	var wg sync.WaitGroup
	wg.Go(func() {
		if len(o.scope.Keys) > 0 {
			spent.Get, spent.Total = 1, 1
			if _, cfErr = primary.Get(ctx, o.scope.Keys[0]); errors.Is(cfErr, kv.ErrNotFound) {
				cfErr = nil
			}
			return
		}
		spent.List, spent.Total = 1, 1
		_, cfErr = primary.List(ctx, kv.ListOptions{Limit: 10})
	})
	wg.Go(func() { mongoErr = connectShadow(ctx) })
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return spent, err
	}
	var problems []string
	if cfErr != nil {
		problems = append(problems, fmt.Sprintf("Workers KV (account %s, namespace %s%s): %s",
			o.cfAccount, o.cfNamespace, atHost(o.cfBaseURL), describeWorkersKV(cfErr)))
	}
	if mongoErr != nil {
		problems = append(problems, fmt.Sprintf("MongoDB at %s: %s", mongoHosts(o.mongoURI), describeMongo(mongoErr)))
	}
	if len(problems) > 0 {
		return spent, &storesError{problems: problems}
	}
	return spent, nil
}

// describeWorkersKV words a failed Workers KV request without the SDK's
// wrapping: the API's own refusal, or why it could not be reached.
func describeWorkersKV(err error) string {
	var api *cfkv.APIError
	if errors.As(err, &api) {
		hint := ""
		switch {
		case api.Code == 7003 || api.Code == 7000:
			hint = " (check CLOUDFLARE_ACCOUNT_ID)"
		case api.Code == 10013 || api.Status == 404:
			hint = " (check CLOUDFLARE_KV_NAMESPACE_ID)"
		case api.Status == 401 || api.Status == 403 || api.Code == 10000 || api.Code == 9106 || api.Code == 6003:
			hint = " (check CLOUDFLARE_API_TOKEN: it needs Workers KV Storage read, and edit to repair)"
		}
		msg := fmt.Sprintf("refused, HTTP %d", api.Status)
		if api.Code != 0 {
			msg += fmt.Sprintf(", code %d", api.Code)
		}
		if api.Message != "" {
			msg += ": " + api.Message
		}
		return msg + hint
	}
	if errors.Is(err, kv.ErrUnavailable) {
		return "unreachable (" + netCause(err.Error(), "no answer") + ")"
	}
	return netCause(err.Error(), err.Error())
}

// describeMongo words a failed connect without the driver's topology dump.
func describeMongo(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "AuthenticationFailed"), strings.Contains(msg, "auth error"), strings.Contains(msg, "authentication failed"):
		return "authentication failed (check the user and password in MONGODB_URI)"
	case errors.Is(err, kv.ErrUnavailable):
		return "unreachable (" + netCause(msg, "no server answered before the server selection timeout") + ")"
	}
	return netCause(msg, "cannot connect (check MONGODB_URI)")
}

// netCause picks the network cause out of an error's text: the driver
// keeps it only inside its topology description.
func netCause(msg, otherwise string) string {
	for _, c := range []struct{ in, says string }{
		{"connection refused", "connection refused: nothing listens there"},
		{"no such host", "no such host"},
		{"i/o timeout", "timed out"},
		{"deadline exceeded", "timed out"},
		{"x509", "TLS certificate refused"},
		{"tls:", "TLS handshake failed"},
		{"connection reset", "connection reset"},
	} {
		if strings.Contains(msg, c.in) {
			return c.says
		}
	}
	return otherwise
}

func atHost(base string) string {
	if base == "" {
		return ""
	}
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		return " at " + u.Host
	}
	return ""
}

// mongoHosts is the host list of a MongoDB URI without its credentials,
// path or options.
func mongoHosts(uri string) string {
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

// withoutTopology drops the MongoDB driver's topology description from an
// error's text: a dump of every server's state that buries the cause (kept
// by netCause) and can run over many lines' worth of one line.
func withoutTopology(msg string) string {
	const marker = ", current topology: {"
	for {
		i := strings.Index(msg, marker)
		if i < 0 {
			return msg
		}
		depth, j := 0, i+len(marker)-1
		for ; j < len(msg); j++ {
			switch msg[j] {
			case '{':
				depth++
			case '}':
				depth--
			}
			if depth == 0 {
				break
			}
		}
		if j >= len(msg) {
			return msg[:i]
		}
		msg = msg[:i] + msg[j+1:]
	}
}
