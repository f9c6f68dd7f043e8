package proxy_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// Three instances over one stage document, each asked at once through its
// admin API to move the stage a different step, round after round: exactly
// one PUT /stage changes each generation; every other answers 409 naming
// the document's stage and generation (or, having read the winner's
// document, 200 unchanged), and every instance runs the document's stage.
func TestConcurrentPutStageTakesOneWinner(t *testing.T) {
	em := newEmulator(t, nil)
	db := srv.Database(t)
	env := em.environment(db)
	client, err := mongo.Connect(options.Client().ApplyURI(srv.URI()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	board := control.NewMongoBoard(client.Database(db))
	document := func() control.Document {
		t.Helper()
		d, err := board.Load(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	timing := []string{"--poll-interval", "100ms", "--heartbeat-interval", "200ms", "--stage", "dualwrite"}
	var ins []*instance
	for _, name := range []string{"a", "b", "c"} {
		ins = append(ins, startInProcess(t, env, append(timing, "--instance", name)))
	}
	for round := range 16 {
		from := document()
		tos := []string{"off", "shadow", "off"}
		if from.Stage != dualwrite.DualWrite {
			tos = []string{"dualwrite", "dualwrite", "dualwrite"}
		}
		codes := make([]int, len(ins))
		outs := make([]map[string]any, len(ins))
		var wg sync.WaitGroup
		for i, in := range ins {
			wg.Go(func() { codes[i], outs[i] = in.setStage(t, tos[i]) })
		}
		wg.Wait()
		now := document()
		doc, gen := now.Stage.String(), now.Generation
		changed := 0
		for i, out := range outs {
			switch {
			case codes[i] == http.StatusOK && out["changed"] == true:
				changed++
			case codes[i] == http.StatusOK, codes[i] == http.StatusConflict:
			default:
				t.Fatalf("round %d: instance %d: %d %v", round, i, codes[i], out)
			}
			if out["stage"] != doc || fmt.Sprint(out["generation"]) != fmt.Sprint(gen) {
				t.Errorf("round %d: instance %d was answered %d %v; the document is %s at %d", round, i, codes[i], out, doc, gen)
			}
		}
		if changed != 1 || gen != from.Generation+1 {
			t.Fatalf("round %d: %d PUTs changed generation %d, now %d: want exactly one", round, changed, from.Generation, gen)
		}
		for i, in := range ins {
			eventually(t, fmt.Sprintf("round %d: instance %d runs %s", round, i, doc), in.runs(t, doc, gen))
		}
	}
}
