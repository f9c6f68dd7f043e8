package workers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/service/admin"
)

// bots drives run-flip.js: one operation at a time through one bot
// isolate, from any goroutine, remembering for every key the last value a
// bot was told was written, and every increment acknowledged.
type bots struct {
	node  *nodeScript
	mu    sync.Mutex
	acked map[string]string // key -> the last value acknowledged
	incrs []int             // the counter's acknowledged values, in order
	logs  []string          // what the Workers logged
}

type answer struct {
	OK    bool            `json:"ok"`
	Value json.RawMessage `json:"value"`
	Error string          `json:"error"`
}

// do runs one operation and returns its answer; an operation the bot was
// refused is an error, with the bot's message.
func (b *bots) do(op map[string]any) (answer, error) {
	line, _ := json.Marshal(op)
	if err := b.node.Say(string(line)); err != nil {
		return answer{}, err
	}
	for {
		l, err := b.node.Next(time.Minute)
		if err != nil {
			return answer{}, err
		}
		var logged struct {
			Log *string `json:"log"`
		}
		if json.Unmarshal([]byte(l), &logged) == nil && logged.Log != nil {
			b.logs = append(b.logs, *logged.Log)
			continue
		}
		var a answer
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			return answer{}, fmt.Errorf("run-flip.js said %q: %w", l, err)
		}
		if !a.OK {
			return a, fmt.Errorf("%s %s: %s", op["bot"], op["op"], a.Error)
		}
		return a, nil
	}
}

// put writes key through bot; hold, when set, holds its copy back until
// that URL answers.
func (b *bots) put(bot, key, value, hold string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	op := map[string]any{"bot": bot, "op": "put", "key": key, "value": value}
	if hold != "" {
		op["hold"] = hold
	}
	if _, err := b.do(op); err != nil {
		return err
	}
	b.acked[key] = value
	return nil
}

// incr is one read-modify-write of the counter through bot: the value it
// read plus one, written back.
func (b *bots) incr(bot string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	a, err := b.do(map[string]any{"bot": bot, "op": "incr", "key": counterKey})
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(string(a.Value))
	if err != nil {
		return fmt.Errorf("incr answered %s", a.Value)
	}
	b.incrs = append(b.incrs, n)
	b.acked[counterKey] = strconv.Itoa(n)
	return nil
}

const counterKey = "flip:counter"

// gate is an HTTP endpoint whose requests wait until it is opened: the
// bot's held copy asks it before it is sent.
type gate struct {
	URL    string
	open   chan struct{}
	opened sync.Once
	hits   chan struct{}
}

func newGate(t *testing.T) *gate {
	g := &gate{open: make(chan struct{}), hits: make(chan struct{}, 16)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.hits <- struct{}{}
		select {
		case <-g.open:
		case <-r.Context().Done():
		}
	}))
	// Opened before the server closes, which waits for the held request:
	// a test that fails before it opens the gate still ends.
	t.Cleanup(func() { g.release(); srv.Close() })
	g.URL = srv.URL + "/hold"
	return g
}

// release lets the held requests go.
func (g *gate) release() { g.opened.Do(func() { close(g.open) }) }

// flip moves the stage one step through the admin API, asking again while
// it is refused (the fence, a lane not drained) until it is applied.
func flip(t *testing.T, adm *admin.Client, to string) {
	t.Helper()
	var last string
	ok := until(time.Minute, func() bool {
		var out map[string]any
		code, err := adm.Do(context.Background(), "PUT", "stage", `{"stage":"`+to+`"}`, &out)
		if code == http.StatusOK && out["applied"] == true {
			return true
		}
		last = fmt.Sprintf("%d %v %v", code, out, err)
		return false
	})
	if !ok {
		t.Fatalf("PUT /stage %s never applied: last %s", to, last)
	}
}

// TestFlipUnderTrafficLosesNothing: three bot isolates in tee mode over
// one KV namespace (stage leases of 1 s), kvshadow-proxy reading Workers KV
// through the bridge Worker and writing the embedded MongoDB-compatible
// server, flipped shadow -> handover -> live and back to shadow through the
// admin API while two isolates write their keys and take turns at a
// read-modify-write counter. bot3 writes once in shadow and then stays idle
// past its lease across the flip; one of bot2's copies is held back until
// the flip to live is applied, past the fence. At the end both stores hold,
// for every key, the last value a bot was told was written, and the counter
// equals its acknowledged increments. The handover's full comparison finds
// the held copy's write in Workers KV before the flip and repairs MongoDB
// with it, so that the late copy displaces nothing: with a second replica
// beside the one the bots reach, no late copy is a conflict either.
func TestFlipUnderTrafficLosesNothing(t *testing.T) {
	for _, replicas := range []int{1, 2} {
		t.Run(fmt.Sprintf("replicas=%d", replicas), func(t *testing.T) { flipUnderTraffic(t, replicas) })
	}
}

func flipUnderTraffic(t *testing.T, replicas int) {
	front := reserve(t)
	w := newFlipWorld(t, "flip", "http://"+front.Addr().String(), "KVSHADOW_STAGE_TTL_MS=1000", "KVSHADOW_STAGE_TIMEOUT_MS=500")
	env := w.env
	// The fence covers a lease (1 s), a stage read (0.5 s) and an
	// invocation with its waitUntil (well under 1 s here).
	flags := []string{"--stage", "shadow", "--consistency-window", "0", "--fence-interval", "3s", "--tee-lease", "1s", "--tee-invocation", "2s",
		"--poll-interval", "100ms", "--heartbeat-interval", "100ms", "--repair-interval", "250ms"}
	_, adminURL := startProxyOn(t, front, env, append([]string{"--instance", "reached"}, flags...)...)
	for i := 2; i <= replicas; i++ { // replicas the bots do not reach
		startProxy(t, env, append([]string{"--instance", fmt.Sprintf("replica-%d", i)}, flags...)...)
	}
	adm := &admin.Client{URL: adminURL, Token: w.adminToken}
	b := &bots{node: w.node, acked: map[string]string{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the Workers logged %q", b.logs)
		}
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// bot3 learns the stage (shadow: its binding) and goes idle.
	must(b.put("bot3", "idle:k", "bot3 in shadow", ""))
	must(b.incr("bot3"))
	// One of bot2's writes goes to its binding now; its copy waits.
	hold := newGate(t)
	must(b.put("bot2", "late:k", "bot2 in shadow, copied after live", hold.URL))
	select { // the copy is held
	case <-hold.hits:
	case <-time.After(time.Minute):
		t.Fatal("bot2's copy never reached the gate")
	}

	stop := make(chan struct{})
	traffic := make(chan error, 1)
	go func() {
		for r := 0; ; r++ {
			select {
			case <-stop:
				traffic <- nil
				return
			default:
			}
			for _, bot := range []string{"bot1", "bot2"} {
				if err := b.put(bot, fmt.Sprintf("%s:k%d", bot, r%5), fmt.Sprintf("%s round %d", bot, r), ""); err != nil {
					traffic <- err
					return
				}
			}
			if err := b.incr([]string{"bot1", "bot2"}[r%2]); err != nil {
				traffic <- err
				return
			}
		}
	}()
	flip(t, adm, "handover")
	flip(t, adm, "live")
	hold.release() // the held copy arrives now, in live: a late copy
	late := until(time.Minute, func() bool {
		st, err := adm.Stats(context.Background())
		must(err)
		var n uint64
		for _, c := range st.Total.LateCopies {
			n += c
		}
		return n > 0
	})
	if !late {
		t.Fatal("the held copy never arrived as a late copy")
	}
	// bot3, idle past its lease, reads and writes after the flip.
	must(b.incr("bot3"))
	must(b.put("bot3", "idle:k", "bot3 in live", ""))
	flip(t, adm, "handover")
	flip(t, adm, "shadow")
	close(stop)
	must(<-traffic)
	must(b.incr("bot3"))

	primary := w.bridge.store(t)
	shadow := shadowStore(t, w.mongo, w.db)
	converged(t, adm, primary, shadow, time.Second)
	p, s := everything(t, primary), everything(t, shadow)
	for key, want := range b.acked {
		for side, got := range map[string]map[string]kv.Entry{"Workers KV": p, "MongoDB": s} {
			if e, ok := got[key]; !ok || !bytes.Equal(e.Value, []byte(want)) {
				t.Errorf("%s: %s holds %q, the bot was told %q was written", key, side, e.Value, want)
			}
		}
	}
	for i, n := range b.incrs {
		if n != i+1 {
			t.Fatalf("increment %d read %d: an acknowledged increment was lost (%v)", i+1, n-1, b.incrs)
		}
	}
	st, err := adm.Stats(context.Background())
	must(err)
	t.Logf("%d keys acknowledged, %d increments across the flip and back; late copies %v, refused %v", len(b.acked), len(b.incrs), st.Total.LateCopies, st.Total.IngestRefused)
	if n := st.Total.LateCopies["conflict"] + st.Total.LateCopies["failed"]; n != 0 {
		t.Fatalf("%d late copies not applied, want none (MongoDB held the copy's value since the handover's comparison): %v", n, st.Total.LateCopies)
	}
}
