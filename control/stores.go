package control

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// Stores is the Target of one instance's dual-write stores, one per
// Workers KV namespace, with their Fleet: what a program that runs several
// replicas of its own store needs, in one value (kvshadow-proxy and botkv
// use it too).
//
//	stores := control.NewStores(board, "") // or a directory to keep the stage in
//	st, err := stores.New("namespace", cfg) // cfg.Fleet set to the fleet's view
//	f, err := control.NewFollower(control.Config{Board: board, Target: stores, Instance: id})
//
// A Follower whose Target is a Stores and whose Config.Fleet is nil takes
// the Stores' Fleet. Add every store before the Follower starts.
type Stores struct {
	fleet *Fleet
	dir   string // where Apply keeps the stage (KeepStage); "" keeps none
	log   *slog.Logger
	ids   []string
	dual  []*dualwrite.Store
}

var (
	_ Target      = (*Stores)(nil)
	_ PeerAware   = (*Stores)(nil)
	_ FlipChecker = (*Stores)(nil)
)

// NewStores returns an empty Stores over board, which keeps the stage it
// applies in dir (see KeepStage) and says on log (nil: slog.Default())
// when it cannot.
func NewStores(board Board, dir string, log *slog.Logger) *Stores {
	log = cmp.Or(log, slog.Default())
	return &Stores{fleet: NewFleet(board), dir: dir, log: log}
}

// Fleet is the Fleet of the stores.
func (s *Stores) Fleet() *Fleet { return s.fleet }

// New builds namespace id's store from cfg, its Fleet the Stores', and
// adds it.
func (s *Stores) New(id string, cfg dualwrite.Config, opts ...dualwrite.Option) (*dualwrite.Store, error) {
	cfg.Fleet = s.fleet.Namespace(id)
	d, err := dualwrite.New(cfg, opts...)
	if err != nil {
		return nil, err
	}
	s.Add(id, d)
	return d, nil
}

// Add adds namespace id's store d, built elsewhere with
// Fleet().Namespace(id) as its Config.Fleet.
func (s *Stores) Add(id string, d *dualwrite.Store) {
	s.ids, s.dual = append(s.ids, id), append(s.dual, d)
}

// Apply implements Target: every store walks to stage one step at a time
// (a store started detached may find the Document moved on), each tried
// even when another refused, so that a retry has less left to do.
func (s *Stores) Apply(ctx context.Context, stage dualwrite.Stage) error {
	var errs []error
	for i, d := range s.dual {
		err := walk(ctx, d, stage)
		if err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", s.ids[i], err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := KeepStage(s.dir, stage); err != nil {
		s.log.Warn("control: cannot keep the stage in the journal directory; a start without MongoDB will not know it", slog.String("error", err.Error()))
	}
	return nil
}

func walk(ctx context.Context, d *dualwrite.Store, stage dualwrite.Stage) error {
	if !stage.Valid() {
		return d.SetStage(ctx, stage) // refused, with the store's own words
	}
	for from := d.Stage(); from != stage; from = d.Stage() {
		next := from + 1
		if stage < from {
			next = from - 1
		}
		if err := d.SetStage(ctx, next); err != nil {
			return err
		}
	}
	return nil
}

// SetPeersUntil implements PeerAware: every store is told.
func (s *Stores) SetPeersUntil(t time.Time) {
	for _, d := range s.dual {
		d.SetPeersUntil(t)
	}
}

// CheckBeforeFlip implements FlipChecker: every store reads
// __kvshadow:stage back.
func (s *Stores) CheckBeforeFlip(ctx context.Context) {
	for _, d := range s.dual {
		d.VerifyStageKey(ctx)
	}
}

// ReportWait bounds how long a heartbeat waits for the lanes to drain.
const ReportWait = time.Second

// Report implements Target: drained when every copy queued before the
// call reached the other store within ReportWait.
func (s *Stores) Report(ctx context.Context) Heartbeat {
	ctx, cancel := context.WithTimeout(ctx, ReportWait)
	defer cancel()
	h := Heartbeat{Drained: true, Watermarks: make(map[string]time.Time, len(s.dual))}
	for i, d := range s.dual {
		h.Drained = d.Flush(ctx) == nil && h.Drained
		st, f := d.Stats(), d.Fence()
		count(&h, st)
		if st.StageKey.Holds() && st.Stage == dualwrite.Handover && h.StageKey == "" {
			h.StageKey = st.StageKey.Found
		}
		h.Watermarks[s.ids[i]] = d.Watermark()
		h.QuietUntil = later(h.QuietUntil, f.QuietUntil)
		h.IngestUnverified += f.IngestUnverified
		h.ComparePending = h.ComparePending || !f.CompareFrom.IsZero() && !f.Compared
		h.FenceRemaining = max(h.FenceRemaining, f.Remaining)
	}
	return h
}

func count(h *Heartbeat, st dualwrite.Stats) {
	h.Dirty, h.Unsettled = h.Dirty+st.Dirty, h.Unsettled+st.Unsettled
	h.ReconciliationNeeded = h.ReconciliationNeeded || st.ReconciliationNeeded
}

// Left is the counts of Leave's heartbeat, after the stores closed.
func (s *Stores) Left() Heartbeat {
	var h Heartbeat
	for _, d := range s.dual {
		count(&h, d.Stats())
	}
	return h
}
