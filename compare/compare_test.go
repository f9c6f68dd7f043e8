package compare_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func found(v string) compare.Observation { return compare.Observation{Found: true, Value: []byte(v)} }

func expiring(v string, at time.Time) compare.Observation {
	o := found(v)
	o.Expiration = at
	return o
}

func TestClassify(t *testing.T) {
	missing := compare.Observation{}
	down := compare.Observation{Err: kv.Unavailable("mongodb", 0, errors.New("no server"))}
	hour := now.Add(time.Hour)
	for _, c := range []struct {
		name    string
		p, s    compare.Observation
		opts    compare.Options
		want    compare.Kind
		diverge bool
	}{
		{"equal", found("a"), found("a"), compare.Options{}, compare.Match, false},
		{"both missing", missing, missing, compare.Options{}, compare.Match, false},
		{"empty vs missing", found(""), missing, compare.Options{}, compare.MissingInShadow, true},
		{"missing in shadow", found("a"), missing, compare.Options{}, compare.MissingInShadow, true},
		{"extra in shadow", missing, found("a"), compare.Options{}, compare.ExtraInShadow, true},
		{"value mismatch", found("a"), found("b"), compare.Options{}, compare.ValueMismatch, true},
		{"json equivalent", found(`{"a":1,"b":[1.0,2]}`), found(`{ "b":[1,2e0], "a":1 }`), compare.Options{}, compare.JSONEquivalent, true},
		{"json different", found(`{"a":1}`), found(`{"a":2}`), compare.Options{}, compare.ValueMismatch, true},
		{"ttl on one side", expiring("a", hour), found("a"), compare.Options{}, compare.TTLMismatch, true},
		{"ttl apart", expiring("a", hour), expiring("a", hour.Add(time.Minute)), compare.Options{}, compare.TTLMismatch, true},
		{"ttl within tolerance", expiring("a", hour), expiring("a", hour.Add(900*time.Millisecond)), compare.Options{}, compare.Match, false},
		{"ttl exact tolerance", expiring("a", hour), expiring("a", hour.Add(time.Second)), compare.Options{TTLTolerance: -1}, compare.TTLMismatch, true},
		{"value beats ttl", expiring("a", hour), found("b"), compare.Options{}, compare.ValueMismatch, true},
		{"expired on shadow", expiring("a", now.Add(2*time.Second)), missing, compare.Options{Now: now}, compare.ExpiredOnOneSide, false},
		{"expired on primary", missing, expiring("a", now.Add(-time.Second)), compare.Options{Now: now}, compare.ExpiredOnOneSide, false},
		{"far expiry is missing", expiring("a", hour), missing, compare.Options{Now: now}, compare.MissingInShadow, true},
		{"primary error", down, found("a"), compare.Options{}, compare.PrimaryError, false},
		{"shadow error", found("a"), down, compare.Options{}, compare.ShadowError, false},
		{"pending", found("a"), found("b"), compare.Options{Now: now, LastWrite: now.Add(-10 * time.Second), ConsistencyWindow: time.Minute}, compare.Pending, false},
		{"window passed", found("a"), found("b"), compare.Options{Now: now, LastWrite: now.Add(-2 * time.Minute), ConsistencyWindow: time.Minute}, compare.ValueMismatch, true},
		{"match inside window", found("a"), found("a"), compare.Options{Now: now, LastWrite: now, ConsistencyWindow: time.Minute}, compare.Match, false},
		{"raced", found("a"), found("b"), compare.Options{Raced: true}, compare.Inconclusive, false},
		{"dirty", found("a"), missing, compare.Options{Dirty: true}, compare.Pending, false},
		{"dirty but equal", found("a"), found("a"), compare.Options{Dirty: true}, compare.Match, false},
		{"dirty shadow error", found("a"), down, compare.Options{Dirty: true}, compare.ShadowError, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := compare.Classify(c.p, c.s, c.opts)
			if got != c.want {
				t.Fatalf("Classify = %s, want %s", got, c.want)
			}
			if got.Divergent() != c.diverge {
				t.Fatalf("%s.Divergent() = %v, want %v", got, got.Divergent(), c.diverge)
			}
			if !got.Valid() {
				t.Fatalf("%s is not in Kinds", got)
			}
		})
	}
}

func TestJSONEqual(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{`1`, `1.0`, true},
		{`1`, `1e0`, true},
		{`0.1`, `1e-1`, true},
		{`12345678901234567890`, `12345678901234567891`, false}, // beyond float64
		{`{"a":[1,{"b":null}]}`, `{"a":[1,{"b":null}]}`, true},
		{`{"a":1}`, `{"a":1,"b":2}`, false},
		{`[1,2]`, `[2,1]`, false},
		{`"x"`, `"\u0078"`, true},
		{`true`, `"true"`, false},
		{`{"a":1}`, `{"a":1} {"a":1}`, false},
		{`{"a":1}`, `{"a":1}}`, false}, // a closing bracket too many is not JSON
		{`[1]`, `[1]]`, false},
		{`{"a":1`, `{"a":1`, false},
		{`1e999999999`, `1e999999998`, false},
		{`1e999999999`, `1e999999999`, true},
		{``, ``, false},
	} {
		if got := compare.JSONEqual([]byte(c.a), []byte(c.b)); got != c.want {
			t.Errorf("JSONEqual(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestRedaction(t *testing.T) {
	const key = "wordle:games:SECRET-KEY-MARKER"
	const value = "SECRET-VALUE-MARKER"
	r, err := compare.NewRedactor("", []byte("test secret"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Policy() != compare.KeyHMAC {
		t.Fatalf("default policy = %s, want hmac", r.Policy())
	}
	p := expiring(value, now.Add(time.Hour))
	rec := r.Record(key, compare.ValueMismatch, p, compare.Observation{Err: fmt.Errorf("%w: key %q", kv.ErrUnavailable, key)}, now)
	text := fmt.Sprintf("%+v", rec)
	for _, marker := range []string{"SECRET-KEY-MARKER", "SECRET-VALUE-MARKER", "games"} {
		if contains(text, marker) {
			t.Fatalf("record %s leaks %q", text, marker)
		}
	}
	if rec.Namespace != "wordle" || rec.Primary.Length != len(value) || !rec.Primary.Present || rec.Shadow.Present {
		t.Fatalf("record = %+v", rec)
	}
	if rec.Error != "shadow: unavailable" {
		t.Fatalf("error = %q, want its class only", rec.Error)
	}
	// The same key or value gives the same hash under one secret, not
	// under another.
	again, _ := compare.NewRedactor(compare.KeyHMAC, []byte("test secret"))
	if r.Key(key) != again.Key(key) || r.Digest(p).Hash != again.Digest(found(value)).Hash {
		t.Fatal("hashes are not stable within a secret")
	}
	other, _ := compare.NewRedactor(compare.KeyHMAC, []byte("other"))
	if other.Key(key) == r.Key(key) {
		t.Fatal("hashes do not depend on the secret")
	}
	random1, _ := compare.NewRedactor(compare.KeyHMAC, nil)
	random2, _ := compare.NewRedactor(compare.KeyHMAC, nil)
	if random1.Key(key) == random2.Key(key) {
		t.Fatal("empty secrets are not random")
	}
	plain, _ := compare.NewRedactor(compare.KeyPlain, nil)
	hidden, _ := compare.NewRedactor(compare.KeyHidden, nil)
	if plain.Key(key) != key || hidden.Key(key) != "wordle:#" || hidden.Key("nomodule") != "#" {
		t.Fatalf("plain %q, hidden %q", plain.Key(key), hidden.Key(key))
	}
	if _, err := compare.ParseKeyPolicy("everything"); err == nil {
		t.Fatal("unknown policy accepted")
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestErrorClass(t *testing.T) {
	for err, want := range map[error]string{
		nil:                                 "",
		kv.Unavailable("x", 0, nil):         "unavailable",
		fmt.Errorf("w: %w", kv.ErrNotFound): "not_found",
		kv.ErrInvalidKey:                    "invalid_input",
		kv.ErrInvalidMetadata:               "invalid_input",
		kv.ErrMetadataUnsupported:           "invalid_input",
		fmt.Errorf("w: %w", kv.ErrPanicked): "panic",
		errors.New("boom"):                  "other",
	} {
		if got := compare.ErrorClass(err); got != want {
			t.Errorf("ErrorClass(%v) = %q, want %q", err, got, want)
		}
	}
}

func FuzzJSONEqual(f *testing.F) {
	f.Add([]byte(`{"a":1}`), []byte(`{"a":1.0}`))
	f.Add([]byte(`1e5`), []byte(`100000`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if compare.JSONEqual(a, b) != compare.JSONEqual(b, a) {
			t.Fatalf("JSONEqual is not symmetric for %q, %q", a, b)
		}
		if compare.JSONEqual(a, b) && !compare.JSONEqual(a, a) {
			t.Fatalf("JSONEqual(%q,%q) but not reflexive", a, b)
		}
	})
}

// Metadata is compared after the value and the expiry, as JSON.
func TestMetadataMismatch(t *testing.T) {
	v := []byte("v")
	obs := func(md string) compare.Observation {
		o := compare.Observation{Found: true, Value: v}
		if md != "" {
			o.Metadata = json.RawMessage(md)
		}
		return o
	}
	cases := []struct {
		p, s string
		want compare.Kind
	}{
		{"", "", compare.Match},
		{`{"a":1,"b":2}`, `{"b":2.0,"a":1}`, compare.Match},
		{`{"a":1}`, "", compare.MetadataMismatch},
		{"", `{"a":1}`, compare.MetadataMismatch},
		{`{"a":1}`, `{"a":2}`, compare.MetadataMismatch},
	}
	for _, c := range cases {
		if got := compare.Classify(obs(c.p), obs(c.s), compare.Options{}); got != c.want {
			t.Errorf("compare.Classify(%s, %s) = %s, want %s", c.p, c.s, got, c.want)
		}
	}
	if !compare.MetadataMismatch.Divergent() || compare.Suspected.Divergent() {
		t.Fatal("metadata_mismatch must be a divergence and suspected must not")
	}
	r, err := compare.NewRedactor(compare.KeyPlain, []byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	if d := r.Digest(obs(`{"a":1}`)); d.Metadata == "" || len(d.Metadata) != 16 {
		t.Fatalf("metadata digest %+v", d)
	}
	if d := r.Digest(obs("")); d.Metadata != "" {
		t.Fatalf("digest of no metadata = %q", d.Metadata)
	}
}
