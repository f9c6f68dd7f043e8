package service

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// The tee's endpoints are two exact paths: a path that merely ends like
// one of them is no route (404), never taken for it.
func TestTeeRoutesMatchExactly(t *testing.T) {
	r := start(t, "--stage", "dualwrite")
	batch := fmt.Sprintf(`{"namespace":%q,"copies":[{"key":"wordle:route","value":"dGVl","acked_at":%d}]}`, DemoNamespace, time.Now().UnixMilli())
	for _, path := range []string{TeePath + "xx/ingest", TeePath + "ingest/", TeePath + "a/b/ingest", TeePath + "xx/stage", TeePath, TeePath + "ingestx"} {
		if code, body := r.tee(t, path, batch); code != http.StatusNotFound {
			t.Errorf("POST %s: %d %s, want 404", path, code, body)
		}
	}
	if code, body := r.tee(t, TeePath+"ingest", batch); code != http.StatusOK {
		t.Fatalf("POST %singest: %d %s", TeePath, code, body)
	}
}
