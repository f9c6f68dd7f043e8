package botkv_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/botkv"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/internal/refused"
	"github.com/kvshadow/kvshadow/internal/syncbuf"
	"github.com/kvshadow/kvshadow/tests/mongotest"
)

// openBound is how long Open may wait for MongoDB before it starts
// detached (botkv's 15 s), with room for a loaded machine.
const openBound = 20 * time.Second

// down is a loopback address where nothing listens, for a MongoDB that is
// down and may start later there (startAndJoin): held until then
// (refused.Addr), so that connections are refused and no other
// process binds it meanwhile, as one could a port picked and closed (the
// store would then join whatever served there, another test's server).
type down struct {
	addr    string
	release func() error
}

func downAddr(t *testing.T) down {
	addr, release, err := refused.Addr()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = release() })
	return down{addr, release}
}

// keepStage writes the stage file a bot that ran stage before would have
// left in dir.
func keepStage(t *testing.T, dir string, stage dualwrite.Stage) {
	if err := control.KeepStage(dir, stage); err != nil {
		t.Fatal(err)
	}
}

// logs is a logger whose lines a test reads while the store writes them.
type logs struct{ syncbuf.Buffer }

func (l *logs) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// A bot restarted while MongoDB is down, whose journal directory says it
// ran dualwrite: Open returns within its bound in dualwrite, detached; the
// bot's writes and reads go through Workers KV and their keys stay dirty.
// When MongoDB comes up at the URI's address, the store joins the control
// board, repairs the keys (settled, nothing left, MongoDB holds every
// value), follows the document's changes and keeps each stage in the
// journal directory.
func TestOpenWithMongoDBDownRunsTheLastStageDetached(t *testing.T) {
	before := ours()
	r := newRig(t)
	off := downAddr(t)
	addr := off.addr
	db := mongotest.NewDatabaseName(t.Name())
	dir := r.env["KVSHADOW_JOURNAL_DIR"]
	keepStage(t, dir, dualwrite.DualWrite)
	var out logs
	// The repairs wait for the breaker, which the copies that failed while
	// MongoDB was down opened: for 1 s, not the default 30 s.
	env := map[string]string{"MONGODB_URI": "mongodb://" + addr + "/?serverSelectionTimeoutMS=500", "MONGODB_DB": db, "KVSHADOW_BREAKER_OPEN_TIMEOUT": "1s"}
	for k, v := range r.env {
		if _, over := env[k]; !over {
			env[k] = v
		}
	}

	ctx := t.Context()
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	st, err := botkv.Open(octx, botkv.Config{Getenv: func(k string) string { return env[k] }}, botkv.WithLogger(out.logger()))
	took := time.Since(start)
	if err != nil {
		t.Fatalf("Open with MongoDB down and %s/stage = dualwrite: %v (after %s); want the store, detached", dir, err, took.Round(time.Millisecond))
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = st.Close(context.Background())
		}
	})
	t.Logf("Open returned detached after %s", took.Round(time.Millisecond))
	if took > openBound {
		t.Errorf("Open took %s with MongoDB down; its bound is 8 s", took)
	}
	if st.Stage() != dualwrite.DualWrite || !st.Detached() {
		t.Fatalf("stage %s, detached %v; want dualwrite, detached", st.Stage(), st.Detached())
	}
	if n := strings.Count(out.String(), "the control board (the stage document) cannot be read"); n != 1 {
		t.Errorf("the warning was logged %d times, want once:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), "connection refused") {
		t.Errorf("the warning does not say why:\n%s", out.String())
	}

	kvs, err := st.Adapter(ErrNotFound)
	if err != nil {
		t.Fatal(err)
	}
	m := Prefixed(kvs, "wordle")
	want := map[string]string{}
	for i := range 20 {
		key, val := fmt.Sprintf("games:%02d", i), fmt.Sprintf(`{"word":"crane","n":%d}`, i)
		if err := m.Put(ctx, key, []byte(val)); err != nil {
			t.Fatalf("Put while MongoDB is down: %v", err)
		}
		got, err := m.Get(ctx, key)
		if err != nil || string(got) != val {
			t.Fatalf("Get while MongoDB is down = %q, %v", got, err)
		}
		want["wordle:"+key] = val
	}
	for deadline := time.Now().Add(20 * time.Second); st.Dual.Stats().Dirty < len(want); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: want the %d keys dirty while MongoDB is down", st.Dual.Stats(), len(want))
		}
	}
	t.Logf("while MongoDB is down: %d keys dirty, drops %v (%s after Open)", st.Dual.Stats().Dirty, st.Dual.Stats().Drops, time.Since(start).Round(time.Millisecond))

	// MongoDB comes up at the URI's address.
	mongo := startAndJoin(ctx, t, off, st)
	t.Logf("joined the control board %s after Open", time.Since(start).Round(time.Millisecond))
	wctx, wcancel := context.WithTimeout(ctx, 90*time.Second)
	defer wcancel()
	left, err := st.WaitSettled(wctx)
	if err != nil || !left.Settled() {
		t.Fatalf("WaitSettled after MongoDB came up = %+v, %v", left, err)
	}
	if s := st.Dual.Stats(); s.Dirty != 0 || s.Unsettled != 0 {
		t.Fatalf("after settling: %d dirty, %d unsettled", s.Dirty, s.Unsettled)
	}
	t.Logf("settled %s after Open", time.Since(start).Round(time.Millisecond))
	client, err := mongokv.NewClient(mongokv.ClientConfig{URI: mongo.URI(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close(context.Background())
	shadow, err := client.Store(mongokv.Config{Database: db})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		got, err := shadow.Get(ctx, k)
		if err != nil || string(got) != v {
			t.Fatalf("MongoDB holds %s = %q, %v; want %q", k, got, err, v)
		}
	}

	// The board now holds the stage document and the bot's heartbeat; the
	// bot follows a change and keeps it.
	mc, err := mongo.Client()
	if err != nil {
		t.Fatal(err)
	}
	board := control.NewMongoBoard(mc.Database(db))
	doc, err := board.Load(ctx)
	if err != nil || doc.Stage != dualwrite.DualWrite {
		t.Fatalf("stage document %+v, %v; want dualwrite, written by the bot once it joined", doc, err)
	}
	if err := board.Swap(ctx, doc.Generation, control.Document{Stage: dualwrite.Shadow, Generation: doc.Generation + 1, UpdatedAt: time.Now(), UpdatedBy: "operator"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); st.Stage() != dualwrite.Shadow; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the store stayed in %s after the document moved to shadow", st.Stage())
		}
	}
	if got, known := control.LastStage(dir); !known || got != dualwrite.Shadow {
		t.Errorf("%s keeps %s (%v) after the move to shadow; want shadow", dir, got, known)
	}

	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	closed = true
	if strings.Contains(out.String(), "current topology") {
		t.Errorf("a log line holds the driver's topology dump:\n%s", out.String())
	}
	time.Sleep(100 * time.Millisecond) // the HTTP client's connections close in the background
	if after := ours(); after > before {
		t.Errorf("Close left %d goroutines running (%d before Open)", after, before)
	}
}

// Started while MongoDB is down with no stage it may run unverified (the
// last one live, none kept, no journal directory), Open fails at once with
// ErrMongoDBDown and a one-line reason, and leaves nothing running.
func TestOpenWithMongoDBDownAndNoStageToRunFails(t *testing.T) {
	r := newRig(t)
	// A short server selection: Open fails as soon as the driver gives up.
	uri := "mongodb://" + downAddr(t).addr + "/?serverSelectionTimeoutMS=500"
	live := t.TempDir()
	keepStage(t, live, dualwrite.Live)
	before, drivers := ours(), driverGoroutines()
	for _, c := range []struct {
		name, dir, says string
	}{
		{"live", live, "the last stage this bot ran is live"},
		{"no stage kept", t.TempDir(), "holds no stage this bot ran"},
		{"no journal directory", "", "without KVSHADOW_JOURNAL_DIR"},
	} {
		start := time.Now()
		st, err := r.open(t, map[string]string{"MONGODB_URI": uri, "KVSHADOW_JOURNAL_DIR": c.dir})
		took := time.Since(start)
		if err == nil {
			_ = st.Close(context.Background())
			t.Errorf("%s: Open succeeded with MongoDB down", c.name)
			continue
		}
		t.Logf("%s: after %s: %v", c.name, took.Round(time.Millisecond), err)
		if !errors.Is(err, botkv.ErrMongoDBDown) || errors.Is(err, botkv.ErrConfig) {
			t.Errorf("%s: %v; want an error matching botkv.ErrMongoDBDown", c.name, err)
		}
		if msg := err.Error(); !strings.Contains(msg, c.says) || !strings.Contains(msg, "start the bot once MongoDB answers") ||
			!strings.Contains(msg, "connection refused") || strings.Contains(msg, "\n") {
			t.Errorf("%s: %q; want one line saying why (%q) and what to do", c.name, msg, c.says)
		}
		if _, err := os.Stat(filepath.Join(c.dir, control.StageFile)); c.dir != "" && c.dir != live && err == nil {
			t.Errorf("%s: a failed Open kept a stage", c.name)
		}
		if took > 10*time.Second {
			t.Errorf("%s: Open took %s to fail with a 500 ms server selection", c.name, took)
		}
	}
	if got, known := control.LastStage(live); !known || got != dualwrite.Live {
		t.Errorf("a failed Open changed the stage kept: %s (%v)", got, known)
	}
	time.Sleep(100 * time.Millisecond)
	if after := ours(); after > before {
		t.Errorf("failed Opens left %d goroutines of kvshadow's running (%d before)", after, before)
	}
	for deadline := time.Now().Add(5 * time.Second); driverGoroutines() > drivers; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("failed Opens left %d MongoDB driver goroutines (%d before)", driverGoroutines(), drivers)
			break
		}
	}
}

// driverGoroutines counts the MongoDB driver's goroutines (its monitors
// and pools).
func driverGoroutines() int {
	buf := make([]byte, 4<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "go.mongodb.org/mongo-driver") {
			n++
		}
	}
	return n
}

// A bot that starts detached in dualwrite while the operator had moved the
// document on to handover (the bot was down, so no flip waited for it)
// walks there one stage at a time once MongoDB answers, each step under
// the store's checks, and keeps handover in its journal directory.
func TestADetachedBotWalksToTheDocumentsStage(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	data, db := t.TempDir(), mongotest.NewDatabaseName(t.Name())
	// The stage documents written on a server of their own port, which the
	// bot never learns: its MongoDB is down at off (held) until it restarts
	// there on the same data.
	off := downAddr(t)
	first, err := mongotest.Start(t.Context(), mongotest.Config{Dir: data, IgnoreEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	mc, err := first.Client()
	if err != nil {
		t.Fatal(err)
	}
	board := control.NewMongoBoard(mc.Database(db))
	for gen, stage := range []dualwrite.Stage{dualwrite.DualWrite, dualwrite.Shadow, dualwrite.Handover} {
		doc := control.Document{Stage: stage, Generation: uint64(gen + 1), UpdatedAt: time.Now(), UpdatedBy: "operator"}
		if err := board.Swap(t.Context(), uint64(gen), doc); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	dir := r.env["KVSHADOW_JOURNAL_DIR"]
	keepStage(t, dir, dualwrite.DualWrite)

	st, err := r.open(t, map[string]string{"MONGODB_URI": "mongodb://" + off.addr + "/?serverSelectionTimeoutMS=500", "MONGODB_DB": db})
	if err != nil {
		t.Fatalf("Open with MongoDB down: %v", err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = st.Close(context.Background())
		}
	})
	if st.Stage() != dualwrite.DualWrite || !st.Detached() {
		t.Fatalf("stage %s, detached %v; want dualwrite, detached", st.Stage(), st.Detached())
	}
	if err := off.release(); err != nil {
		t.Fatal(err)
	}
	again, err := mongotest.Start(t.Context(), mongotest.Config{Dir: data, IgnoreEnv: true, Listen: off.addr})
	if err != nil {
		t.Fatalf("restarting MongoDB on %s: %v", off.addr, err)
	}
	t.Cleanup(func() { _ = again.Close() })
	for deadline := time.Now().Add(30 * time.Second); st.Detached() || st.Stage() != dualwrite.Handover; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("stage %s, detached %v 30 s after MongoDB's start; want handover, the document's", st.Stage(), st.Detached())
		}
	}
	if got, known := control.LastStage(dir); !known || got != dualwrite.Handover {
		t.Errorf("%s keeps %s (%v); want handover", dir, got, known)
	}
	if err := st.Close(t.Context()); err != nil { // while MongoDB answers
		t.Fatal(err)
	}
	closed = true
}

// A bot restarted in shadow (its stage file's) while MongoDB is down, with
// KVSHADOW_STAGE still dualwrite from its first deployment: the operator
// reads one warning for the outage, saying which hosts do not answer, what
// the bot serves meanwhile and what it does once MongoDB answers; the
// writes meanwhile (whose copies fail) add no warning of MongoDB's or the
// control board's. When MongoDB comes up with an empty board, the bot
// writes the stage it serves, shadow, as generation 1, stays in shadow (no
// step back to KVSHADOW_STAGE's dualwrite) and says the join in one info
// line.
func TestADetachedStartSaysItOnceAndSeedsTheBoardWithItsStage(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	off := downAddr(t)
	addr := off.addr
	db := mongotest.NewDatabaseName(t.Name())
	dir := r.env["KVSHADOW_JOURNAL_DIR"]
	keepStage(t, dir, dualwrite.Shadow)
	var out logs
	env := maps.Clone(r.env)
	env["MONGODB_URI"], env["MONGODB_DB"] = "mongodb://"+addr+"/?serverSelectionTimeoutMS=500", db
	ctx := t.Context()
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := botkv.Open(octx, botkv.Config{Getenv: func(k string) string { return env[k] }}, botkv.WithLogger(out.logger()))
	if err != nil {
		t.Fatalf("Open with MongoDB down and %s/stage = shadow: %v", dir, err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	if st.Stage() != dualwrite.Shadow || !st.Detached() {
		t.Fatalf("stage %s, detached %v; want shadow, detached", st.Stage(), st.Detached())
	}
	kvs, err := st.Adapter(ErrNotFound)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := kvs.Put(ctx, fmt.Sprintf("wordle:down:%d", i), []byte("v")); err != nil {
			t.Fatalf("Put while MongoDB is down: %v", err)
		}
	}
	// Until the copies have failed and MongoDB has been tried again.
	for deadline := time.Now().Add(20 * time.Second); st.Dual.Stats().Dirty < 10; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: want the 10 keys dirty while MongoDB is down", st.Dual.Stats())
		}
	}
	time.Sleep(6 * time.Second) // three polls and a heartbeat of the follower, a retry of the copies
	// The breaker's changes are the dual-write store's own state (what its
	// metric and alerts follow), not a word on the outage.
	warnings := lines(out.String(), "level=WARN", "dualwrite: circuit breaker")
	if len(warnings) != 1 {
		t.Errorf("%d warnings while detached, want one for the outage:\n%s", len(warnings), out.String())
	} else {
		for _, says := range []string{"the control board (the stage document) cannot be read", addr, "connection refused", "serving in shadow", filepath.Join(dir, control.StageFile),
			"Workers KV is authoritative", "once MongoDB answers, the bot joins the control board"} {
			if !strings.Contains(warnings[0], says) {
				t.Errorf("the warning does not say %q:\n%s", says, warnings[0])
			}
		}
	}

	mongo := startAndJoin(ctx, t, off, st)
	mc, err := mongo.Client()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := control.NewMongoBoard(mc.Database(db)).Load(ctx)
	if err != nil || doc.Stage != dualwrite.Shadow || doc.Generation != 1 {
		t.Errorf("the stage document the bot wrote at the join: %+v, %v; want shadow (the stage it serves) at generation 1", doc, err)
	}
	time.Sleep(2 * time.Second) // a poll after the join
	if st.Stage() != dualwrite.Shadow {
		t.Errorf("the store runs %s after the join; want shadow, no step back", st.Stage())
	}
	if got, known := control.LastStage(dir); !known || got != dualwrite.Shadow {
		t.Errorf("%s keeps %s (%v) after the join; want shadow", dir, got, known)
	}
	if joined := lines(out.String(), "control:"); len(joined) != 1 || !strings.Contains(joined[0], "level=INFO") || !strings.Contains(joined[0], "stage=shadow") {
		t.Errorf("the follower logged %d lines, want one info line for the join:\n%s", len(joined), out.String())
	}
	if changed := lines(out.String(), "stage changed"); len(changed) != 0 {
		t.Errorf("the store changed stage at the join:\n%s", strings.Join(changed, "\n"))
	}
}

// startAndJoin starts MongoDB at the down address, where the detached store
// st's URI points, and waits until st has joined the control board. The
// address is released just before FerretDB binds it, in this goroutine.
func startAndJoin(ctx context.Context, t *testing.T, at down, st *botkv.Store) *mongotest.Server {
	t.Helper()
	if err := at.release(); err != nil {
		t.Fatal(err)
	}
	mongo, err := mongotest.Start(ctx, mongotest.Config{Dir: t.TempDir(), IgnoreEnv: true, Listen: at.addr})
	if err != nil {
		t.Fatalf("starting MongoDB on %s: %v", at.addr, err)
	}
	t.Cleanup(func() { _ = mongo.Close() })
	for deadline := time.Now().Add(30 * time.Second); st.Detached(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the store did not join the control board within 30 s of MongoDB's start")
		}
	}
	return mongo
}

// lines returns the log lines that hold has and none of the others.
func lines(log, has string, not ...string) []string {
	var got []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, has) && !slices.ContainsFunc(not, func(n string) bool { return strings.Contains(l, n) }) {
			got = append(got, l)
		}
	}
	return got
}

// stageRead is what the driver sends to read the stage document: the
// command's first element, find on the control collection, in BSON.
func stageRead() []byte {
	name := control.ControlCollection + "\x00"
	b := []byte("\x02find\x00")
	b = binary.LittleEndian.AppendUint32(b, uint32(len(name)))
	return append(b, name...)
}

// A bot whose connect to MongoDB works but whose read of the stage
// document fails (the network breaks mid-read: a relay drops every
// connection that sends it) starts as with MongoDB down: detached, in the
// stage its stage file names, with one warning that says the stage
// document cannot be read; its copies reach MongoDB meanwhile. Once the
// read works it joins, writing the stage it serves to the empty board.
func TestOpenWithTheStageDocumentUnreadableRunsDetached(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	relay, uri := mongotest.NewRelay(t, srv)
	relay.DropOn(stageRead())
	dir := r.env["KVSHADOW_JOURNAL_DIR"]
	keepStage(t, dir, dualwrite.Shadow)
	var out logs
	env := maps.Clone(r.env)
	env["MONGODB_URI"] = uri
	ctx := t.Context()
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	st, err := botkv.Open(octx, botkv.Config{Getenv: func(k string) string { return env[k] }}, botkv.WithLogger(out.logger()))
	if err != nil {
		t.Fatalf("Open with the stage document unreadable and %s/stage = shadow: %v; want the store, detached", dir, err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	t.Logf("Open returned after %s", time.Since(start).Round(time.Millisecond))
	if st.Stage() != dualwrite.Shadow || !st.Detached() {
		t.Fatalf("stage %s, detached %v; want shadow, detached", st.Stage(), st.Detached())
	}
	kvs, err := st.Adapter(ErrNotFound)
	if err != nil {
		t.Fatal(err)
	}
	if err := kvs.Put(ctx, "wordle:detached", []byte("v")); err != nil {
		t.Fatalf("Put while detached: %v", err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if left, err := st.WaitSettled(wctx); err != nil || !left.Settled() {
		t.Errorf("WaitSettled while only the stage document is unreadable = %+v, %v; want the copy in MongoDB", left, err)
	}
	time.Sleep(3 * time.Second) // polls and a heartbeat while the stage document is unreadable
	if !st.Detached() {
		t.Fatal("the store joined a board whose stage document cannot be read")
	}
	// FerretDB builds no TTL index, which mongokv says once: that is the
	// server's own, not the start's.
	warnings := lines(out.String(), "level=WARN", "dualwrite: circuit breaker", "cannot build TTL indexes")
	if len(warnings) != 1 {
		t.Errorf("%d warnings while detached, want one:\n%s", len(warnings), out.String())
	} else if w := warnings[0]; !strings.Contains(w, " answers, but ") || !strings.Contains(w, "the stage document) cannot be read") ||
		// The cause is the read's last failure: the connection dropped
		// mid-answer, or, when the driver retried it until Open's bound,
		// the bound.
		!strings.Contains(w, "the connection closed mid-answer") && !strings.Contains(w, "timed out") ||
		!strings.Contains(w, "serving in shadow") || !strings.Contains(w, "copies to MongoDB go on") || strings.Contains(w, "cannot connect") {
		t.Errorf("the warning does not say that MongoDB answers, the stage document cannot be read and why, and what the bot does:\n%s", w)
	}

	relay.DropOn(nil)
	for deadline := time.Now().Add(30 * time.Second); st.Detached(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the store did not join within 30 s of the stage document's read working")
		}
	}
	doc, err := r.board(t).Load(ctx)
	if err != nil || doc.Stage != dualwrite.Shadow || doc.Generation != 1 {
		t.Errorf("the stage document after the join: %+v, %v; want shadow at generation 1", doc, err)
	}
	if st.Stage() != dualwrite.Shadow {
		t.Errorf("the store runs %s after the join; want shadow", st.Stage())
	}
}
