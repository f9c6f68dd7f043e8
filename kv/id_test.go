package kv_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/kv"
)

var idForm = regexp.MustCompile(kv.IDForm)

func checkID(t *testing.T, id string) {
	t.Helper()
	if got, want := kv.IsID(id), idForm.MatchString(id); got != want {
		t.Errorf("IsID(%q) = %v, the form says %v", id, got, want)
	}
}

func TestIsIDMatchesItsForm(t *testing.T) {
	for _, id := range []string{"", "a", "0123456789abcdef0123456789abcdef", "ns-1_a", "ns/1", "ns.1", "ns 1", "é",
		strings.Repeat("a", 64), strings.Repeat("a", 65)} {
		checkID(t, id)
	}
	for c := range 256 {
		b := string([]byte{byte(c)})
		for _, id := range []string{b, "a" + b, b + "a", strings.Repeat("a", 63) + b} {
			checkID(t, id)
		}
	}
}

func FuzzIsIDMatchesItsForm(f *testing.F) {
	for _, id := range []string{"", "a", "ns-1_a", "ns/1", strings.Repeat("a", 65)} {
		f.Add(id)
	}
	f.Fuzz(checkID)
}
