package control

import (
	"fmt"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// unsyncedError lists the instances that keep a flip from happening.
type unsyncedError struct{ reasons []string }

func (e *unsyncedError) Error() string {
	return "control: the flip waits until every instance is drained and clean: " + strings.Join(e.reasons, "; ")
}

func (e *unsyncedError) Is(target error) bool {
	return target == ErrNotDrained || target == dualwrite.ErrUnsynced
}

// blockers says, for each heartbeat that keeps a flip from happening, why.
// self is the calling instance, checked by its fresh report instead.
func blockers(beats []Heartbeat, self Heartbeat, generation uint64, now time.Time, liveFor time.Duration) error {
	var reasons []string
	check := func(h Heartbeat, live bool) {
		var why []string
		if h.Dirty > 0 || (!live && h.Unsettled > 0) {
			why = append(why, fmt.Sprintf("%d dirty and %d unsettled keys", h.Dirty, h.Unsettled))
		}
		if h.ReconciliationNeeded {
			why = append(why, "a full reconciliation is needed")
		}
		if live && !h.Drained {
			why = append(why, "lanes not drained")
		}
		if live && h.Generation != generation {
			why = append(why, fmt.Sprintf("runs generation %d, not %d", h.Generation, generation))
		}
		if len(why) == 0 {
			return
		}
		state := "live"
		switch {
		case h.Stopped:
			state = "stopped; restart it on its journal, or reconcile and forget it"
		case !live:
			state = fmt.Sprintf("silent for %s; restart it on its journal, or reconcile and forget it", now.Sub(h.At).Round(time.Second))
		}
		reasons = append(reasons, fmt.Sprintf("instance %q (%s): %s", h.Instance, state, strings.Join(why, ", ")))
	}
	check(self, true)
	for _, h := range beats {
		if h.Instance == self.Instance {
			continue
		}
		check(h, !h.Stopped && now.Sub(h.At) < liveFor)
	}
	if len(reasons) > 0 {
		return &unsyncedError{reasons: reasons}
	}
	return nil
}
