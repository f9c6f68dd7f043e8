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
// exactly these. An empty value leaves that side alone.
type injection struct {
	key             string
	kind            compare.Kind
	primary, shadow string
	ttl             time.Duration // of the primary's value
}

// injections use keys the workload never touches, so no later write of the
// bot's repairs them.
var injections = []injection{
	{key: "wordle:injected:value", kind: compare.ValueMismatch, primary: `{"word":"apple"}`, shadow: `{"word":"mango"}`},
	{key: "trading:injected:missing", kind: compare.MissingInShadow, primary: `{"balance":10}`},
	{key: "loldle-emoji:injected:extra", kind: compare.ExtraInShadow, shadow: `{"emoji":"🦊"}`},
	{key: "xo:injected:json", kind: compare.JSONEquivalent, primary: `{"a":1,"b":[1,2]}`, shadow: `{"b":[1,2.0], "a":1}`},
	{key: "misc:injected:ttl", kind: compare.TTLMismatch, primary: "x", shadow: "x", ttl: 2 * time.Hour},
}

func inject(ctx context.Context, primary, shadow kv.Store) error {
	for _, in := range injections {
		if in.primary != "" {
			if err := primary.Put(ctx, in.key, []byte(in.primary), kv.PutOptions{TTL: in.ttl}); err != nil {
				return fmt.Errorf("inject %s into the primary: %w", in.key, err)
			}
		}
		if in.shadow != "" {
			if err := shadow.Put(ctx, in.key, []byte(in.shadow), kv.PutOptions{}); err != nil {
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
