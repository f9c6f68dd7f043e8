package service

import (
	"context"
	"log/slog"
	"slices"
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

// connector is a store that connects now when asked (mongokv's), and
// leaves a failure to its caller to say: the start probe, which says it.
type connector interface {
	Connect(ctx context.Context) error
}

// startAnswer is one store's answer to the start probe: where it is, in
// words ready for a verb, and its error.
type startAnswer struct {
	where string
	role  dualwrite.Role
	err   error
}

// startAnswers are every store's answers, two per namespace.
type startAnswers []startAnswer

// probeAtStart reads a missing key from every store once, all at once (a
// store that connects on demand is connected first, so that the failure
// is the probe's to say).
func probeAtStart(ctx context.Context, all []Sides) startAnswers {
	answers := make(startAnswers, 2*len(all))
	var wg sync.WaitGroup
	for i, sd := range all {
		s := &served{id: sd.ID, primary: sd.Primary, shadow: sd.Shadow, sides: sd}
		for j, role := range []dualwrite.Role{dualwrite.RolePrimary, dualwrite.RoleShadow} {
			wg.Go(func() {
				pctx, cancel := context.WithTimeout(ctx, probeTimeout)
				defer cancel()
				err := connect(pctx, s, role)
				if err == nil {
					err = s.get(pctx, role)
				}
				answers[2*i+j] = startAnswer{where: s.describe(role, err), role: role, err: err}
			})
		}
	}
	wg.Wait()
	return answers
}

// connect connects the store of role now, if it is a connector.
func connect(ctx context.Context, s *served, role dualwrite.Role) error {
	st := s.primary
	if role == dualwrite.RoleShadow {
		st = s.shadow
	}
	if c, ok := st.(connector); ok {
		return c.Connect(ctx)
	}
	return nil
}

// refused is a settingsError naming every store that refused the
// settings, or nil.
func (as startAnswers) refused() error {
	var lines []string
	for _, a := range as {
		if storeerr.Refused(a.err) {
			lines = append(lines, a.where)
		}
	}
	if len(lines) > 0 {
		return &settingsError{lines: lines}
	}
	return nil
}

// log says each answer in one line, once however many namespaces share
// the store. A store that does not answer is a warning only: the instance
// starts, and takes the store back when it answers (readiness says whether
// that keeps traffic away). With boardDown, MongoDB's not answering is
// said by the detached start's one line (logDetached), which names it too.
func (as startAnswers) log(log *slog.Logger, boardDown bool) {
	var said []string
	for _, a := range as {
		if slices.Contains(said, a.where) || boardDown && a.role == dualwrite.RoleShadow && a.err != nil {
			continue
		}
		said = append(said, a.where)
		if a.err == nil {
			log.Info("kvshadow-proxy: " + a.where + "answers")
		} else {
			log.Warn("kvshadow-proxy: " + a.where)
		}
	}
}

// shadowDown is the first shadow that did not answer, in the probe's
// words ("MongoDB at h: unreachable (...)"), or otherwise.
func (as startAnswers) shadowDown(otherwise string) string {
	for _, a := range as {
		if a.role == dualwrite.RoleShadow && a.err != nil {
			return a.where
		}
	}
	return otherwise
}
