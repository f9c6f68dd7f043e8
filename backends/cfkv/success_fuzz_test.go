package cfkv

import (
	"encoding/json"
	"testing"
)

// FuzzSuccessOf: successOf reads every body as encoding/json does, and a
// write's answer with no allocation.
func FuzzSuccessOf(f *testing.F) {
	for _, s := range []string{
		`{"success":true,"errors":[],"messages":[],"result":null}`,
		`{"result":null,"success":false,"errors":[{"code":10001,"message":"a \"quoted\" }, message"}],"messages":[]}`,
		` { "Success" : true } `, `{"SUCCESS":false}`, `{"success":true,"success":null}`, `{"success":"true"}`,
		`{"success":true,"success":1}`, `{"s\u0075ccess":true}`, `{"ſuccess":true}`, `{}`, `null`, `[true]`, `true`, `{"success":true`,
		`{"a":{"success":false},"b":[{"success":false}],"success":true}`, `{"a":"}","success":false}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var env struct {
			Success *bool `json:"success"`
		}
		wantFound := json.Unmarshal(body, &env) == nil && env.Success != nil
		success, found := successOf(body)
		if found != wantFound || (found && success != *env.Success) {
			t.Fatalf("successOf(%q) = %t, %t; encoding/json: found %t, %v", body, success, found, wantFound, env.Success)
		}
	})
}

func TestSuccessOfAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("json.Valid takes its scanner from a sync.Pool, which the race detector empties at random")
	}
	body := []byte(`{"success":true,"errors":[],"messages":[],"result":null}`)
	if allocs := testing.AllocsPerRun(100, func() { successOf(body) }); allocs != 0 {
		t.Errorf("successOf allocates %v times for a write's answer, want 0", allocs)
	}
}
