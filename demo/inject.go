package main

import (
	"context"
	"fmt"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

// injection is a divergence the demo makes by writing around the dual-write
// layer, as a forgotten script or a manual fix would; the report must find
// exactly these.
type injection struct {
	key  string
	kind compare.Kind
	// primary and shadow write the key on each side; nil leaves that side
	// alone.
	primary, shadow func(ctx context.Context, s kv.Store, key string) error
}

func put(v string, opts kv.PutOptions) func(context.Context, kv.Store, string) error {
	return func(ctx context.Context, s kv.Store, key string) error { return s.Put(ctx, key, []byte(v), opts) }
}

// injections use keys the workload never touches, so no later write of the
// bot's repairs them.
var injections = []injection{
	{key: "wordle:injected:value", kind: compare.ValueMismatch,
		primary: put(`{"word":"apple"}`, kv.PutOptions{}), shadow: put(`{"word":"mango"}`, kv.PutOptions{})},
	{key: "trading:injected:missing", kind: compare.MissingInShadow,
		primary: put(`{"balance":10}`, kv.PutOptions{})},
	{key: "loldle-emoji:injected:extra", kind: compare.ExtraInShadow,
		shadow: put(`{"emoji":"🦊"}`, kv.PutOptions{})},
	{key: "xo:injected:json", kind: compare.JSONEquivalent,
		primary: put(`{"a":1,"b":[1,2]}`, kv.PutOptions{}), shadow: put(`{"b":[1,2.0], "a":1}`, kv.PutOptions{})},
	{key: "misc:injected:ttl", kind: compare.TTLMismatch,
		primary: put("x", kv.PutOptions{TTL: 2 * time.Hour}), shadow: put("x", kv.PutOptions{})},
}

// inject writes every injection straight to the two stores.
func inject(ctx context.Context, primary, shadow kv.Store) error {
	for _, in := range injections {
		if in.primary != nil {
			if err := in.primary(ctx, primary, in.key); err != nil {
				return fmt.Errorf("inject %s into the primary: %w", in.key, err)
			}
		}
		if in.shadow != nil {
			if err := in.shadow(ctx, shadow, in.key); err != nil {
				return fmt.Errorf("inject %s into the shadow: %w", in.key, err)
			}
		}
	}
	return nil
}

// checkFound compares the report's divergences with the injections: the
// report carries keys as the redactor shows them, so the expected keys go
// through the same redactor.
func checkFound(records []compare.Record, red *compare.Redactor) error {
	want := map[string]compare.Kind{}
	for _, in := range injections {
		want[red.Key(in.key)] = in.kind
	}
	var problems []string
	for _, rec := range records {
		if !rec.Kind.Divergent() {
			continue
		}
		kind, ok := want[rec.Key]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("unexpected %s on %s", rec.Kind, rec.Key))
		case kind != rec.Kind:
			problems = append(problems, fmt.Sprintf("%s is %s, want %s", rec.Key, rec.Kind, kind))
		}
		delete(want, rec.Key)
	}
	for key, kind := range want {
		problems = append(problems, fmt.Sprintf("injected %s on %s not found", kind, key))
	}
	if len(problems) > 0 {
		return fmt.Errorf("the report does not match the injected divergences: %q", problems)
	}
	return nil
}
