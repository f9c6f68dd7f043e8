package mongokv

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kvshadow/kvshadow/kv"
)

func TestCollectionOf(t *testing.T) {
	for key, want := range map[string]string{
		"wordle:games:42":   "wordle",
		"loldle-emoji:x":    "loldle_emoji",
		"loldle_emoji:x":    "loldle_emoji",
		"a-b-c:":            "a_b_c",
		"plain":             DefaultCollection,
		"Wordle:x":          DefaultCollection,
		"é:1":               DefaultCollection,
		":x":                DefaultCollection,
		"a b:x":             DefaultCollection,
		"wordle":            DefaultCollection,
		"trading:wordle:1":  "trading",
		"0:zero":            "0",
		"x.y:dotted-module": DefaultCollection,
	} {
		if got := collectionOf(key); got != want {
			t.Errorf("collectionOf(%q) = %q, want %q", key, got, want)
		}
	}
	for _, name := range []string{DefaultCollection, ChunkCollection, GenerationCollection} {
		if isModuleCollection(name) {
			t.Errorf("%q could be mistaken for a module's collection", name)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	for prefix, want := range map[string]string{
		"wordle:":               "wordle;",
		"a":                     "b",
		"é":                     "ê",
		"a\u007f":               "a\u0080",
		"x\uD7FF":               "x\uE000",
		"x\U0010FFFF":           "y",
		"\U0010FFFF":            "",
		"日本":                    "日\u672d",
		"s:":                    "s;",
		"a\U0010FFFF\U0010FFFF": "b",
	} {
		got, ok := prefixEnd(prefix)
		if want == "" {
			if ok {
				t.Errorf("prefixEnd(%q) = %q, want none", prefix, got)
			}
			continue
		}
		if !ok || got != want {
			t.Errorf("prefixEnd(%q) = %q, %v; want %q", prefix, got, ok, want)
		}
	}
	if _, ok := prefixEnd(""); ok {
		t.Error("the empty prefix has an upper bound")
	}
}

// FuzzPrefixEnd checks the bound List relies on: valid UTF-8, above every
// key that starts with the prefix, and no valid key between them.
func FuzzPrefixEnd(f *testing.F) {
	for _, s := range []string{"wordle:", "é", "\U0010FFFF", "x\uD7FF", "a\u007f"} {
		f.Add(s, "suffix")
	}
	f.Fuzz(func(t *testing.T, prefix, suffix string) {
		if !utf8.ValidString(prefix) || !utf8.ValidString(suffix) {
			return
		}
		end, ok := prefixEnd(prefix)
		if !ok {
			if strings.Trim(prefix, "\U0010FFFF") != "" {
				t.Fatalf("prefixEnd(%q): no bound", prefix)
			}
			return
		}
		if !utf8.ValidString(end) {
			t.Fatalf("prefixEnd(%q) = %q is not valid UTF-8", prefix, end)
		}
		if key := prefix + suffix; key >= end {
			t.Fatalf("key %q is not below the bound %q of its prefix %q", key, end, prefix)
		}
		// The key just below the bound, if it is valid, starts with prefix.
		if below := end[:len(end)-1]; utf8.ValidString(below) && below >= prefix && !strings.HasPrefix(below, prefix) {
			t.Fatalf("%q lies in [%q, %q) without the prefix", below, prefix, end)
		}
	})
}

// run makes a sorted run of listed keys, each with its own name as its
// metadata, so that a merge that parts a key from its info shows.
func run(keys ...string) []listed {
	out := make([]listed, len(keys))
	for i, k := range keys {
		out[i] = listed{key: k, info: kv.KeyInfo{Metadata: json.RawMessage(strconv.Quote(k))}}
	}
	return out
}

// mergedKeys returns the keys of a merge, failing if one lost its info.
func mergedKeys(t *testing.T, page []listed) []string {
	t.Helper()
	keys := make([]string, len(page))
	for i, l := range page {
		if string(l.info.Metadata) != strconv.Quote(l.key) {
			t.Fatalf("mergeRuns gave %q the info %s", l.key, l.info.Metadata)
		}
		keys[i] = l.key
	}
	return keys
}

func TestMergeRuns(t *testing.T) {
	runs := [][]listed{run("a:1", "a:3", "a:5"), run("b"), run("a:2", "a:4"), {}}
	got, more := mergeRuns(slices.Clone(runs), 10)
	if want := []string{"a:1", "a:2", "a:3", "a:4", "a:5", "b"}; !slices.Equal(mergedKeys(t, got), want) || more {
		t.Fatalf("mergeRuns = %q, %v; want %q, false", mergedKeys(t, got), more, want)
	}
	got, more = mergeRuns(slices.Clone(runs), 3)
	if want := []string{"a:1", "a:2", "a:3"}; !slices.Equal(mergedKeys(t, got), want) || !more {
		t.Fatalf("mergeRuns(limit 3) = %q, %v; want %q, true", mergedKeys(t, got), more, want)
	}
	got, more = mergeRuns(slices.Clone(runs), 6)
	if len(got) != 6 || more {
		t.Fatalf("mergeRuns(limit exactly all) = %q, %v; want all and no more", mergedKeys(t, got), more)
	}
	if got, more := mergeRuns(nil, 5); got == nil || len(got) != 0 || more {
		t.Fatalf("mergeRuns(nothing) = %#v, %v", got, more)
	}
	if got, more := mergeRuns([][]listed{run("x", "y")}, 1); !slices.Equal(mergedKeys(t, got), []string{"x"}) || !more {
		t.Fatalf("mergeRuns(one run, limit 1) = %q, %v", mergedKeys(t, got), more)
	}
}

func TestGroup(t *testing.T) {
	order, by := group([]string{"b:1", "a:1", "b:2", "b:1", "plain"})
	if !slices.Equal(order, []string{"b", "a", DefaultCollection}) || !slices.Equal(by["b"], []string{"b:1", "b:2"}) {
		t.Fatalf("group = %q, %q", order, by)
	}
}
