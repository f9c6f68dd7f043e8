package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/internal/storeerr"
	"github.com/kvshadow/kvshadow/kv"
)

// storesError is every problem the preflight found, one line each.
type storesError struct{ problems []string }

func (e *storesError) Error() string { return strings.Join(e.problems, "\n") }

// preflight checks both stores at once before the scan, so that a wrong
// account is not hidden behind an unreachable MongoDB, and words each
// problem in one line: what failed, the likely cause, what to check. It
// returns its one Workers KV request, for the report to count.
func preflight(ctx context.Context, o *options, primary kv.Store, connectShadow func(context.Context) error) (report.Requests, error) {
	var cfErr, mongoErr error
	var spent report.Requests
	var wg sync.WaitGroup
	wg.Go(func() {
		if len(o.cfg.Scope.Keys) > 0 {
			spent.Get, spent.Total = 1, 1
			if _, cfErr = primary.Get(ctx, o.cfg.Scope.Keys[0]); errors.Is(cfErr, kv.ErrNotFound) {
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
			o.cfAccount, o.cfNamespace, storeerr.AtHost(o.cfBaseURL), storeerr.WorkersKV(cfErr)))
	}
	if mongoErr != nil {
		problems = append(problems, fmt.Sprintf("MongoDB at %s: %s", storeerr.MongoHosts(o.mongoURI), storeerr.MongoDB(mongoErr)))
	}
	if len(problems) > 0 {
		return spent, &storesError{problems: problems}
	}
	return spent, nil
}
