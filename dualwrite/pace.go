package dualwrite

import (
	"context"
	"time"

	"github.com/kvshadow/kvshadow/budget"
)

// ShadowPacing counts what the shadow's request budget
// (Config.ShadowBudget) held back.
type ShadowPacing struct {
	// Delayed is the operations toward the shadow that waited for the
	// budget (copies and comparisons in their lanes, verification reads),
	// and Waited their waits added up; a copy that waited past its life
	// is then dropped as timed out, its key dirty (Drops).
	Delayed uint64        `json:"delayed"`
	Waited  time.Duration `json:"waited_ns"`
	// Deferred is the repairs put off to a later pass because the budget
	// had no room at once (a lane never waits for a repair's turn).
	Deferred uint64 `json:"deferred"`
}

// budgetOf is role's request budget, nil for none.
func (s *Store) budgetOf(r Role) *budget.Limiter {
	if r == RoleShadow {
		return s.cfg.ShadowBudget
	}
	return s.cfg.PrimaryBudget
}

// pace waits, on a lane, until the shadow's budget lets an operation on
// target start, and counts the wait; the primary's budget never holds a
// lane. The wait ends early when Close gives up draining, and the
// operation is then abandoned.
func (s *Store) pace(target Role) {
	if target == RoleShadow {
		_ = s.waitBudget(s.pacing, RoleShadow, 1)
	}
}

// waitBudget waits for n requests of role's budget, counting the shadow's
// waits (a wait ctx cut short included).
func (s *Store) waitBudget(ctx context.Context, r Role, n int) error {
	b := s.budgetOf(r)
	if b == nil {
		return nil
	}
	for range n {
		if b.TryTake() {
			continue
		}
		start := s.clock.Now()
		err := b.Wait(ctx)
		if r == RoleShadow {
			s.ctr.paceDelayed.Add(1)
			s.ctr.paceWaited.Add(int64(s.clock.Now().Sub(start)))
		}
		if err != nil {
			return err
		}
	}
	return nil
}
