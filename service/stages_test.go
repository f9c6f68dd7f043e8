package service

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// The stage machine through the admin API, over every pair of stages: one
// step along the list is applied, anything else is refused with 409 and a
// message naming the next allowed steps, and complete is never left.
func TestEveryStagePairThroughTheAdminAPI(t *testing.T) {
	next := map[dualwrite.Stage]string{
		dualwrite.Off:       "the next allowed stage is dualwrite",
		dualwrite.DualWrite: "the next allowed stages are off and shadow",
		dualwrite.Shadow:    "the next allowed stages are dualwrite and handover",
		dualwrite.Handover:  "the next allowed stages are shadow and live",
		dualwrite.Live:      "the next allowed stages are handover and rampdown",
		dualwrite.Rampdown:  "the next allowed stages are live and complete",
		dualwrite.Complete:  "complete is one-way",
	}
	put := func(t *testing.T, r *running, to dualwrite.Stage) (int, map[string]any) {
		t.Helper()
		var out map[string]any
		confirm := "" // complete, one-way, takes its confirmation
		if to == dualwrite.Complete {
			confirm = `,"confirm_irreversible":true`
		}
		return r.call(t, "PUT", "/stage", `{"stage":"`+to.String()+`"`+confirm+`}`, &out), out
	}
	for _, from := range dualwrite.Stages {
		t.Run(from.String(), func(t *testing.T) {
			r := start(t, "--stage", from.String())
			allowed := map[dualwrite.Stage]bool{from: true}
			for _, n := range dualwrite.NextStages(from) {
				allowed[n] = true
			}
			for _, to := range dualwrite.Stages {
				if allowed[to] {
					continue
				}
				code, out := put(t, r, to)
				msg, _ := out["error"].(string)
				if code != http.StatusConflict || !strings.Contains(msg, next[from]) || out["stage"] != from.String() {
					t.Errorf("%s -> %s: %d %v", from, to, code, out)
				}
			}
			if code, out := put(t, r, from); code != http.StatusOK || out["changed"] != false {
				t.Errorf("%s -> %s: %d %v", from, from, code, out)
			}
			for _, to := range dualwrite.NextStages(from) {
				if code, out := put(t, r, to); code != http.StatusOK || out["stage"] != to.String() || out["applied"] != true {
					t.Fatalf("%s -> %s: %d %v", from, to, code, out)
				}
				code, out := put(t, r, from) // and back, but never out of complete
				if want := http.StatusOK; to == dualwrite.Complete {
					if msg, _ := out["error"].(string); code != http.StatusConflict || !strings.Contains(msg, next[to]) {
						t.Fatalf("%s -> %s: %d %v", to, from, code, out)
					}
				} else if code != want || out["stage"] != from.String() {
					t.Fatalf("%s -> %s: %d %v", to, from, code, out)
				}
			}
		})
	}
}
