package mongokv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/kvshadow/kvshadow/kv"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/auth"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
)

// backendName names MongoDB in kv.UnavailableError.
const backendName = "mongodb"

// driverError is a driver error with its message redacted. It answers
// errors.Is for the errors it wraps (context.DeadlineExceeded, ...) but does
// not unwrap to them, so that no unredacted message is reachable through it.
type driverError struct {
	msg   string
	cause error
}

func (e *driverError) Error() string { return e.msg }

// Is matches what the driver's error matches, and kv.ErrAccessDenied for a
// refused login or a command the user has no rights to.
func (e *driverError) Is(target error) bool {
	return errors.Is(e.cause, target) || target == kv.ErrAccessDenied && accessDenied(e.cause)
}

// accessDenied reports a login the server refused (the driver's auth error
// at a connection's handshake, code 18) or a command the user may not run
// (code 13).
func accessDenied(err error) bool {
	var (
		login *auth.Error
		se    mongo.ServerError
	)
	return errors.As(err, &login) || errors.As(err, &se) && (se.HasErrorCode(codeUnauthorized) || se.HasErrorCode(codeAuthenticationFailed))
}

// The server's codes of a refusal of the user.
const (
	codeUnauthorized         = 13
	codeAuthenticationFailed = 18
)

// wrap redacts err and prefixes it with what was being done.
func (c *Client) wrap(what string, err error) error {
	return &driverError{msg: "mongokv: " + what + ": " + c.redact.redact(ShortTopology(err.Error())), cause: err}
}

// ShortTopology replaces the driver's topology description in an error's
// text (every server's state, often longer than a log line) with the first
// server's last error, which is the cause.
func ShortTopology(msg string) string {
	const marker, last = ", current topology: {", "Last error: "
	i := strings.Index(msg, marker)
	if i < 0 {
		return msg
	}
	dump, rest := msg[i+len(marker):], ""
	depth := 1
	for j := 0; j < len(dump); j++ {
		switch dump[j] {
		case '{':
			depth++
		case '}':
			depth--
		}
		if depth == 0 {
			dump, rest = dump[:j], dump[j+1:]
			break
		}
	}
	cause := ""
	if _, after, ok := strings.Cut(dump, last); ok {
		cause, _, _ = strings.Cut(after, " }")
		cause = " (last error: " + strings.TrimSpace(cause) + ")"
	}
	return msg[:i] + cause + ShortTopology(rest)
}

// opError maps a driver error of an operation to the kv contract: the
// caller's own cancellation as is, a closed client as kv.ErrClosed, a server
// that cannot be reached as kv.ErrUnavailable, anything else redacted.
func (c *Client) opError(ctx context.Context, op string, err error) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("mongokv: %s: %w", op, ctx.Err())
	case errors.Is(err, mongo.ErrClientDisconnected):
		return fmt.Errorf("mongokv: %s: %w", op, kv.ErrClosed)
	case unreachable(err):
		return kv.Unavailable(backendName, c.retryAfter, c.wrap(op, err))
	}
	return c.wrap(op, err)
}

// unreachable reports errors that mean "the server cannot serve now": no
// server could be selected, the network failed, the server is stepping down
// or overloaded.
func unreachable(err error) bool {
	var (
		sel topology.ServerSelectionError
		dns *net.DNSError
		op  *net.OpError
	)
	if errors.As(err, &sel) || errors.As(err, &dns) || errors.As(err, &op) {
		return true
	}
	if mongo.IsNetworkError(err) || mongo.IsTimeout(err) {
		return true
	}
	var le mongo.LabeledError
	if errors.As(err, &le) && (le.HasErrorLabel("RetryableWriteError") || le.HasErrorLabel("SystemOverloadedError")) {
		return true
	}
	var se mongo.ServerError
	return errors.As(err, &se) && slices.ContainsFunc(notPrimaryCodes, se.HasErrorCode)
}

// notPrimaryCodes are the server's codes for "not now": shutting down,
// stepping down, not writable, host unreachable.
var notPrimaryCodes = []int{6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436}
