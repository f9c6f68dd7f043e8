package kvapi

import (
	"regexp"
	"testing"
)

// The request path checks tokens with loops; these are the regular
// expressions they stand for.
var (
	bearerForm = regexp.MustCompile(`^Bearer ([A-Za-z0-9._~+/-]+=*)$`)
	tokenForm  = regexp.MustCompile(`^[A-Za-z0-9._~+/-]+=*$`)
)

var matchSeeds = []string{
	"", "a", "Bearer ", "Bearer t", "Bearer  t", "bearer t", "Bearer t ", "Bearer t=", "Bearer t==", "Bearer =",
	"Bearer t=a", "Bearer a.b_c~d+e/f-g", "Bearer ab#", "Bearer é", "Bearer\tt", "Basic dXNlcg==",
	"0123456789abcdef0123456789abcdef", "=", "a=", "a==b",
}

func checkMatchers(t *testing.T, s string) {
	t.Helper()
	if tok, ok := bearerToken(s); ok != bearerForm.MatchString(s) || (ok && "Bearer "+tok != s) {
		t.Errorf("bearerToken(%q) = %q, %v; the form says %v", s, tok, ok, bearerForm.MatchString(s))
	}
	if got, want := isToken(s), tokenForm.MatchString(s); got != want {
		t.Errorf("isToken(%q) = %v, want %v", s, got, want)
	}
}

func TestMatchersAgreeWithTheirForms(t *testing.T) {
	for _, s := range matchSeeds {
		checkMatchers(t, s)
		checkMatchers(t, "Bearer "+s)
	}
	// Every single byte, alone, as a token's tail and as its padding.
	for c := range 256 {
		b := string([]byte{byte(c)})
		for _, s := range []string{b, "a" + b, "a=" + b, "Bearer " + b, "Bearer a" + b, "Bearer a=" + b} {
			checkMatchers(t, s)
		}
	}
}

func FuzzMatchersAgreeWithTheirForms(f *testing.F) {
	for _, s := range matchSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkMatchers(t, s) })
}
