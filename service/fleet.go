package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/dualwrite/dualwriteotel"
	"github.com/kvshadow/kvshadow/ingest"
	"github.com/kvshadow/kvshadow/internal/storeerr"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/otelkv"
	"github.com/kvshadow/kvshadow/service/admin"
)

// served is one namespace: its two stores and the dual-write store over
// them.
type served struct {
	id              string
	primary, shadow kv.Store // the backends, uninstrumented: the readiness probe reads them
	sides           Sides    // their names, for messages
	dual            *dualwrite.Store
	front           kv.Store // dual, instrumented for the callers' spans: what kvapi serves
}

// get reads probeKey from the store of role; a miss is an answer.
func (s *served) get(ctx context.Context, role dualwrite.Role) error {
	st := s.primary
	if role == dualwrite.RoleShadow {
		st = s.shadow
	}
	if _, err := st.Get(ctx, probeKey); err != nil && !errors.Is(err, kv.ErrNotFound) {
		return err
	}
	return nil
}

// describe words the failure err of the store of role in one line: where
// it is, and what its error means (storeerr).
//
// A nil err gives the name alone, ready for a verb ("MongoDB at h: ").
func (s *served) describe(role dualwrite.Role, err error) string {
	if err == nil {
		if role == dualwrite.RoleShadow {
			return cmpOr(s.sides.ShadowAt, "the shadow") + ": "
		}
		return cmpOr(s.sides.PrimaryAt, "the primary") + ": "
	}
	if role == dualwrite.RoleShadow {
		where := cmpOr(s.sides.ShadowAt, "the shadow")
		if s.sides.ShadowSystem == "" || s.sides.ShadowSystem == otelkv.SystemMongoDB {
			return where + ": " + storeerr.MongoDB(err)
		}
		return where + ": " + storeerr.WithoutTopology(err.Error())
	}
	where := cmpOr(s.sides.PrimaryAt, "the primary")
	if s.sides.PrimarySystem == "" || s.sides.PrimarySystem == otelkv.SystemCloudflareKV {
		return where + ": " + storeerr.WorkersKV(err)
	}
	return where + ": " + err.Error()
}

// fleet is every namespace the instance serves. It is the control.Target of
// the instance and the StatsSource of its gauges.
type fleet struct {
	ns  []*served
	reg metric.Registration
	tee atomic.Pointer[ingest.Handler] // the tee endpoint, when served: its refused batches count in Stats
	// stateDir keeps the stage the stores run (control.KeepStage), for a start
	// without the control board; "" keeps none. log says when it cannot.
	stateDir string
	log      *slog.Logger
}

var (
	_ control.Target    = (*fleet)(nil)
	_ control.PeerAware = (*fleet)(nil)
)

// fleetWith is the plumbing newFleet's stores are built with.
type fleetWith struct {
	tp   trace.TracerProvider
	mp   metric.MeterProvider
	log  *slog.Logger
	opts []dualwrite.Option
}

// newFleet builds one instrumented dual-write store per namespace, all in
// cfg.Stage. Each has an Observer of its own (span attributes follow its
// store) and its logger names its namespace; one callback reports the
// gauges of the whole fleet, summed, so that several namespaces never
// observe one series twice.
func newFleet(cfg dualwrite.Config, all []Sides, journals []dualwrite.Journal, with fleetWith) (*fleet, error) {
	tp, mp, log, opts := with.tp, with.mp, with.log, with.opts
	f := &fleet{}
	var first *dualwriteotel.Observer
	for i, sd := range all {
		obs, err := dualwriteotel.New(dualwriteotel.WithTracerProvider(tp), dualwriteotel.WithMeterProvider(mp))
		if err != nil {
			return nil, errors.Join(err, f.close(context.Background()))
		}
		obs.StageChanged(dualwrite.StageEvent{To: cfg.Stage})
		wrap := func(s kv.Store, system, role string) (kv.Store, error) {
			return otelkv.New(s, otelkv.Config{System: system, Role: role, Redactor: cfg.Redactor, Stage: obs.Stage},
				otelkv.WithTracerProvider(tp), otelkv.WithMeterProvider(mp))
		}
		c := cfg
		if journals != nil {
			c.Journal = journals[i]
		}
		if nf, ok := c.Fleet.(interface{ Namespace(string) dualwrite.Fleet }); ok {
			c.Fleet = nf.Namespace(sd.ID) // the watermarks of this namespace alone
		}
		var errs [3]error
		c.Primary, errs[0] = wrap(sd.Primary, cmpOr(sd.PrimarySystem, otelkv.SystemCloudflareKV), otelkv.RolePrimary)
		c.Shadow, errs[1] = wrap(sd.Shadow, cmpOr(sd.ShadowSystem, otelkv.SystemMongoDB), otelkv.RoleShadow)
		if err := errors.Join(errs[:2]...); err != nil {
			return nil, errors.Join(err, f.close(context.Background()))
		}
		nlog := log.With(slog.String("kv_namespace", sd.ID))
		dual, err := dualwrite.New(c, append([]dualwrite.Option{dualwrite.WithObserver(obs), dualwrite.WithLogger(nlog)}, opts...)...)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("namespace %s: %w", sd.ID, err), f.close(context.Background()))
		}
		s := &served{id: sd.ID, primary: sd.Primary, shadow: sd.Shadow, sides: sd, dual: dual}
		f.ns = append(f.ns, s)
		if s.front, errs[2] = wrap(dual, otelkv.SystemComposite, otelkv.RoleComposite); errs[2] != nil {
			return nil, errors.Join(errs[2], f.close(context.Background()))
		}
		if first == nil {
			first = obs
		}
	}
	reg, err := first.Watch(f)
	if err != nil {
		return nil, errors.Join(err, f.close(context.Background()))
	}
	f.reg = reg
	return f, nil
}

// stores maps each namespace ID to what the front serves.
func (f *fleet) stores() map[string]kv.Store {
	m := make(map[string]kv.Store, len(f.ns))
	for _, s := range f.ns {
		m[s.id] = s.front
	}
	return m
}

// Apply implements control.Target: every store, each tried even when
// another refused, so that a retry has less left to do. A store more than
// one step from stage (an instance that started without the stage document
// and finds it moved on) walks there one step at a time, each step under
// its own checks, as the document itself went. Once every store runs stage,
// it is kept in stateDir.
func (f *fleet) Apply(ctx context.Context, stage dualwrite.Stage) error {
	var errs []error
	for _, s := range f.ns {
		if err := control.Walk(ctx, s.dual, stage); err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", s.id, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := control.KeepStage(f.stateDir, stage); err != nil && f.log != nil {
		f.log.Warn("kvshadow-proxy: cannot keep the stage in the journal directory; a start without MongoDB will not know it",
			slog.String("error", err.Error()))
	}
	return nil
}

// CheckBeforeFlip implements control.FlipChecker: every store reads
// __kvshadow:stage back.
func (f *fleet) CheckBeforeFlip(ctx context.Context) {
	for _, s := range f.ns {
		s.dual.VerifyStageKey(ctx)
	}
}

// SetPeersUntil implements control.PeerAware: every store is told.
func (f *fleet) SetPeersUntil(t time.Time) {
	for _, s := range f.ns {
		s.dual.SetPeersUntil(t)
	}
}

// reportWait bounds how long a heartbeat waits for the lanes to drain.
const reportWait = time.Second

// Report implements control.Target: drained when every copy queued before
// the call has reached the other store within reportWait.
func (f *fleet) Report(ctx context.Context) control.Heartbeat {
	ctx, cancel := context.WithTimeout(ctx, reportWait)
	defer cancel()
	h := control.Heartbeat{Drained: true}
	for _, s := range f.ns {
		if err := s.dual.Flush(ctx); err != nil {
			h.Drained = false
		}
	}
	st := f.Stats()
	h.Dirty, h.Unsettled, h.ReconciliationNeeded = st.Dirty, st.Unsettled, st.ReconciliationNeeded
	if st.StageKey.Holds() && st.Stage == dualwrite.Handover {
		h.StageKey = st.StageKey.Found
	}
	h.Watermarks = make(map[string]time.Time, len(f.ns))
	for _, s := range f.ns {
		h.Watermarks[s.id] = s.dual.Watermark()
	}
	for _, s := range f.ns {
		fence := s.dual.Fence()
		if fence.QuietUntil.After(h.QuietUntil) {
			h.QuietUntil = fence.QuietUntil
		}
		h.IngestUnverified += fence.IngestUnverified
		h.ComparePending = h.ComparePending || !fence.CompareFrom.IsZero() && !fence.Compared
		h.FenceRemaining = max(h.FenceRemaining, fence.Remaining)
	}
	return h
}

// Stats sums the namespaces' snapshots: the gauges' source. The batches
// the tee endpoint refused whole count with the copies refused one by one.
func (f *fleet) Stats() dualwrite.Stats {
	all := make([]dualwrite.Stats, len(f.ns))
	for i, s := range f.ns {
		all[i] = s.dual.Stats()
	}
	sum := admin.Sum(all...)
	for reason, n := range f.teeRefused() {
		sum.IngestRefused[dualwrite.IngestRefusal(reason)] += n
	}
	return sum
}

// teeRefused is what the tee endpoint refused whole, by error code; none
// before it serves.
func (f *fleet) teeRefused() map[string]uint64 {
	if tee := f.tee.Load(); tee != nil {
		return tee.Refused()
	}
	return nil
}

// NamespaceStats implements dualwriteotel.NamespacedSource: the fence's
// gauge is per namespace.
func (f *fleet) NamespaceStats() map[string]dualwrite.Stats {
	m := make(map[string]dualwrite.Stats, len(f.ns))
	for _, s := range f.ns {
		m[s.id] = s.dual.Stats()
	}
	return m
}

// close drains and closes every store until ctx ends, and stops the gauges.
func (f *fleet) close(ctx context.Context) error {
	var errs []error
	for _, s := range f.ns {
		if err := s.dual.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", s.id, err))
		}
	}
	if f.reg != nil {
		errs = append(errs, f.reg.Unregister())
		f.reg = nil
	}
	return errors.Join(errs...)
}

// newRedactor is the key redaction shared by spans, divergence records and
// the admin API: an HMAC whose secret instances share when the operator
// gives one, so that a key hashes alike on every instance.
func newRedactor(secret string) (*compare.Redactor, error) {
	var key []byte
	if secret != "" {
		key = []byte(secret)
	}
	return compare.NewRedactor(compare.KeyHMAC, key)
}
