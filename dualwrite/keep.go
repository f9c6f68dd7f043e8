package dualwrite

import (
	"context"
	"errors"
	"time"

	"github.com/kvshadow/kvshadow/compare"
)

// Keeper keeps, for a late copy reported as a Conflict, the side that the
// authoritative store does not hold after it: the copy itself for a
// conflict or a failure (MongoDB's value stands, and verification will
// bring Workers KV level with it, erasing the copy there), and what
// MongoDB held for a copy applied while another instance may have written
// the key (the copy overwrote it). Without it a record has both sides'
// digests and neither value, and the operator cannot carry out a decision
// for the side that lost. The Store calls Keep under the key's lock, before
// the authoritative store is written, so that nothing is overwritten
// before it is kept; an error is carried in the record (KeepError), and
// the Store goes on as it would without a Keeper.
type Keeper interface {
	// Keep stores k and returns the reference the record carries (Kept).
	Keep(ctx context.Context, k Kept) (ref string, err error)
}

// Kept is what a Keeper keeps of a late copy: its key, as written (never
// redacted: a decision writes it), Displaced, the side the authoritative
// store does not hold after the copy (Found false: a deletion), and
// Standing, the side it holds, so that a decision can tell whether the key
// was written since.
type Kept struct {
	Key                 string
	Displaced, Standing compare.Observation
}

// errStandingUnread: the authoritative store could not be read, so the
// side it holds is not known, nor which one the copy displaces.
var errStandingUnread = errors.New("the authoritative store could not be read")

// keepTimeout bounds a Keep, which a tee that stops waiting does not
// cancel: the side it keeps is gone from both stores once verification
// has run.
const keepTimeout = 30 * time.Second

// keep hands a Conflict's displaced side to the Keeper, if any, and notes
// the outcome in c. Called under the key's lock.
func (s *Store) keep(ctx context.Context, c *Conflict, key string, displaced, standing compare.Observation) {
	if s.cfg.Keeper == nil {
		return
	}
	var err error
	switch {
	case displaced.Err != nil || standing.Err != nil:
		err = errStandingUnread
	default:
		// The side that stands as WriteIf will read it: its expiry and
		// metadata only where both stores keep them.
		if !s.withExpiry {
			standing.Expiration = time.Time{}
		}
		if !s.metadata {
			standing.Metadata = nil
		}
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keepTimeout)
		c.Kept, err = s.cfg.Keeper.Keep(kctx, Kept{Key: key, Displaced: displaced, Standing: standing})
		cancel()
	}
	if err != nil {
		c.Kept, c.KeepError = "", err.Error()
	}
}
