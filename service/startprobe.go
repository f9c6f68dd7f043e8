package service

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/internal/storeerr"
)

// settingsError is every store that refused the settings at start (a
// token, an account, a namespace, MongoDB's credentials), one line each:
// the environment is wrong, which a restart does not mend (exit 2).
type settingsError struct{ lines []string }

func (e *settingsError) Error() string { return strings.Join(e.lines, "\n") }
func (e *settingsError) Unwrap() error { return ErrUsage }

// probeAtStart reads a missing key from every store once, all at once, and
// logs each answer in one line. A store that refuses the settings makes a
// settingsError; one that does not answer is a warning only: the instance
// starts, and takes the store back when it answers (readiness says whether
// that keeps traffic away).
func probeAtStart(ctx context.Context, all []Sides, log *slog.Logger) error {
	type answer struct {
		where string
		err   error
	}
	answers := make([]answer, 2*len(all))
	var wg sync.WaitGroup
	for i, sd := range all {
		s := &served{id: sd.ID, primary: sd.Primary, shadow: sd.Shadow, sides: sd}
		for j, role := range []dualwrite.Role{dualwrite.RolePrimary, dualwrite.RoleShadow} {
			wg.Go(func() {
				pctx, cancel := context.WithTimeout(ctx, probeTimeout)
				defer cancel()
				a := answer{where: s.describe(role, nil)}
				if err := s.get(pctx, role); err != nil {
					a = answer{where: s.describe(role, err), err: err}
				}
				answers[2*i+j] = a
			})
		}
	}
	wg.Wait()
	var refused []string
	for _, a := range answers {
		switch {
		case a.err == nil:
			log.Info("kvshadow-proxy: " + a.where + "answers")
		case storeerr.Refused(a.err):
			refused = append(refused, a.where)
		default:
			log.Warn("kvshadow-proxy: " + a.where)
		}
	}
	if len(refused) > 0 {
		return &settingsError{lines: refused}
	}
	return nil
}
