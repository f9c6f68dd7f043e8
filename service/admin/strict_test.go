package admin

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// Admin JSON names each field once and exactly as documented: a field
// given twice or in another case is refused, never taken as the last one
// or as its lower-case self.
func TestAdminJSONFieldsOnceAndExact(t *testing.T) {
	st := &fakeStager{change: control.Change{Document: control.Document{Stage: dualwrite.Shadow, Generation: 2}, Changed: true, Applied: true}}
	h := newHandler(t, st, &fakeStore{})
	for body, want := range map[string]string{
		`{"stage":"off","stage":"shadow"}`:               `stage\" is given twice`,
		`{"STAGE":"shadow"}`:                             `unknown field \"STAGE`,
		`{"Stage":"shadow"}`:                             `unknown field \"Stage`,
		`{"stage":"shadow","Confirm_Irreversible":true}`: `unknown field \"Confirm_Irreversible`,
	} {
		w := do(h, "PUT", "/stage", body, true)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), want) {
			t.Errorf("PUT /stage %s: %d %s, want 400 with %q", body, w.Code, w.Body.String(), want)
		}
	}
	if len(st.asked) != 0 {
		t.Fatalf("refused bodies changed the stage: %v", st.asked)
	}
	if w := do(h, "PUT", "/stage", `{"stage":"shadow"}`, true); w.Code != http.StatusOK {
		t.Fatalf("PUT /stage as documented: %d %s", w.Code, w.Body.String())
	}
}
