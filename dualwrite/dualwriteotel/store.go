package dualwriteotel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"

	"go.opentelemetry.io/otel/metric"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/otelkv"
)

// Config names the two backends for NewStore. The zero value is the
// migration this project was built for: Workers KV to MongoDB.
type Config struct {
	// PrimarySystem and ShadowSystem are the db.system.name of the stores;
	// "" means otelkv.SystemCloudflareKV and otelkv.SystemMongoDB.
	PrimarySystem, ShadowSystem string
	// Unwatched leaves the gauges to the caller (Observer.Watch), who
	// watches one source that sums several stores, so that several never
	// observe one series twice.
	Unwatched bool
}

// Store is an instrumented dual-write store.
type Store struct {
	// KV is what the application uses in place of its store: the composite
	// wrapped for the caller's spans. It is a kv.ExpiryGetter, as the
	// composite is.
	KV kv.Store
	// Dual controls the composite: SetStage, Stats, RepairDirty, Flush.
	Dual *dualwrite.Store
	// Observer is the composite's Observer.
	Observer *Observer

	reg metric.Registration
}

// NewStore builds the composite of cfg with every layer instrumented: the
// primary's and the shadow's calls as spans of their roles, the composite's
// own operations as the caller's spans above them, and its asynchronous
// side through an Observer. All layers share cfg.Redactor (one is drawn
// when it is nil), so a key hashes the same on every span and record.
func NewStore(cfg dualwrite.Config, tcfg Config, opts ...Option) (*Store, error) {
	o := resolve(opts)
	if cfg.Primary == nil || cfg.Shadow == nil {
		return nil, fmt.Errorf("%w: both Primary and Shadow stores are required", dualwrite.ErrInvalidConfig)
	}
	// Once wrapped, the same store twice would no longer look the same to
	// dualwrite.New.
	if t := reflect.TypeOf(cfg.Primary); t == reflect.TypeOf(cfg.Shadow) && t.Comparable() && cfg.Primary == cfg.Shadow {
		return nil, fmt.Errorf("%w: Primary and Shadow are the same store", dualwrite.ErrInvalidConfig)
	}
	if cfg.Redactor == nil {
		r, err := compare.NewRedactor(compare.KeyHMAC, nil)
		if err != nil {
			return nil, fmt.Errorf("dualwriteotel: %w", err)
		}
		cfg.Redactor = r
	}
	obs, err := New(opts...)
	if err != nil {
		return nil, err
	}
	obs.stage.Store(uint32(cfg.Stage))
	wrap := func(s kv.Store, system, def, role string) (kv.Store, error) {
		return otelkv.New(s, otelkv.Config{System: cmp.Or(system, def), Role: role, Redactor: cfg.Redactor, Stage: obs.Stage},
			otelkv.WithTracerProvider(o.tp), otelkv.WithMeterProvider(o.mp))
	}
	if cfg.Primary, err = wrap(cfg.Primary, tcfg.PrimarySystem, otelkv.SystemCloudflareKV, otelkv.RolePrimary); err != nil {
		return nil, err
	}
	if cfg.Shadow, err = wrap(cfg.Shadow, tcfg.ShadowSystem, otelkv.SystemMongoDB, otelkv.RoleShadow); err != nil {
		return nil, err
	}
	dual, err := dualwrite.New(cfg, append(o.storeOpts, dualwrite.WithObserver(obs))...)
	if err != nil {
		return nil, err
	}
	front, err := wrap(dual, otelkv.SystemComposite, "", otelkv.RoleComposite)
	var reg metric.Registration
	if err == nil && !tcfg.Unwatched {
		reg, err = obs.Watch(dual)
	}
	if err != nil {
		return nil, errors.Join(err, dual.Close(context.Background()))
	}
	return &Store{KV: front, Dual: dual, Observer: obs, reg: reg}, nil
}

// Close closes the composite (draining its lanes until ctx ends, see
// dualwrite.Store.Close) and stops the gauges.
func (s *Store) Close(ctx context.Context) error {
	err := s.Dual.Close(ctx)
	if s.reg == nil {
		return err
	}
	return errors.Join(err, s.reg.Unregister())
}
