package settle_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/internal/syncbuf"
	"github.com/kvshadow/kvshadow/kv"
)

const (
	account   = "0123456789abcdef0123456789abcdef"
	namespace = "fedcba9876543210fedcba9876543210"
	token     = "settle-token"
)

// rig is one primary (the REST API server over memory, on loopback HTTP)
// and one shadow (a database of the embedded MongoDB-compatible server, or
// a second REST API server) that writer processes share.
type rig struct {
	baseURL  string // the primary's for writer processes: an emulator process
	checkURL string // the same primary's for the test (see emulator)
	// shadowURL and shadowCheck are the same for a shadow that is an
	// emulator; empty for MongoDB.
	shadowURL, shadowCheck string
	db                     string
	primary                *cfkv.Store
	shadow                 kv.Store
}

func newRig(t *testing.T) *rig { return newRigOf(t, false) }

// newRigOf makes a rig whose shadow is a second emulator when emulated:
// the embedded MongoDB-compatible server scans a collection for every
// query, which settling thousands of keys cannot afford.
func newRigOf(t *testing.T, emulated bool) *rig {
	t.Helper()
	if testing.Short() {
		t.Skip("runs writer processes for seconds")
	}
	r := &rig{db: srv.Database(t)}
	em := r.spawn(t, childConfig{Emulator: true})
	em.waitReady(t)
	r.baseURL, r.checkURL, _ = strings.Cut(em.url, " ")
	if emulated {
		sh := r.spawn(t, childConfig{Emulator: true})
		sh.waitReady(t)
		r.shadowURL, r.shadowCheck, _ = strings.Cut(sh.url, " ")
	}
	primary, shadow, done, err := openStores(context.Background(), r.apiURL(r.checkURL), r.shadowAPI(), srv.URI(), r.db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(done)
	r.primary, r.shadow = primary, shadow
	return r
}

// apiURL is the REST API's base URL on a check listener.
func (r *rig) apiURL(check string) string { return check + "/client/v4/" }

// shadowAPI is the shadow emulator's REST API for the test, or "".
func (r *rig) shadowAPI() string {
	if r.shadowCheck == "" {
		return ""
	}
	return r.apiURL(r.shadowCheck)
}

// quiet waits until the emulators' writer listeners have no connection
// open: every request a killed writer had sent has been served, and the
// stores no longer change under the test.
func (r *rig) quiet(t *testing.T) {
	t.Helper()
	for _, check := range []string{r.checkURL, r.shadowCheck} {
		if check == "" {
			continue
		}
		deadline := time.Now().Add(time.Minute)
		for {
			resp, err := http.Get(check + connsPath)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if string(body) == "0" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("an emulator still has %s writer connections a minute after the kill", body)
			}
			time.Sleep(10 * time.Millisecond) // another process's sockets: nothing to wait on
		}
	}
}

var (
	writerOnce sync.Once
	writerBin  string
	writerErr  error
)

// writerBinary is the binary writer processes run: this test binary, or,
// under the race detector, this package's tests built without it, so that a
// writer runs at the speed of production code.
func writerBinary(t *testing.T) string {
	t.Helper()
	if !raceEnabled {
		return os.Args[0]
	}
	writerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "settle-writer-")
		if err != nil {
			writerErr = err
			return
		}
		writerBin = filepath.Join(dir, "settle.test")
		out, err := exec.Command("go", "test", "-c", "-o", writerBin, ".").CombinedOutput()
		if err != nil {
			writerErr = fmt.Errorf("go test -c: %v\n%s", err, out)
		}
	})
	if writerErr != nil {
		t.Fatal(writerErr)
	}
	return writerBin
}

// writer is a child process writing through its own dual-write store.
type writer struct {
	cmd    *exec.Cmd
	exited chan error
	ready  chan struct{}

	mu    sync.Mutex
	url   string // an emulator's
	acked map[string]bool
	acks  int
	stats *childStats
	// statsRaw is the stats line as printed; confirmed the reports of a
	// fleet writer, "KEY UNIXMS" each.
	statsRaw  string
	confirmed []string
	errs      []string
	bursts    chan int // the number of each burst as it begins
	// burstAcks are the acknowledged writes when each burst began.
	burstAcks []int
	stderr    syncbuf.Buffer // written by exec while a failing test reads it
}

func (r *rig) start(t *testing.T, c childConfig) *writer {
	t.Helper()
	c.BaseURL, c.ShadowURL, c.MongoURI, c.MongoDB = r.baseURL, r.shadowURL, srv.URI(), r.db
	if c.Journal == "" {
		c.Journal = filepath.Join(t.TempDir(), "settle-"+c.ID+".db")
	}
	return r.spawn(t, c)
}

func (r *rig) spawn(t *testing.T, c childConfig) *writer {
	t.Helper()
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	w := &writer{exited: make(chan error, 1), ready: make(chan struct{}), acked: map[string]bool{}, bursts: make(chan int, 64)}
	w.cmd = exec.Command(writerBinary(t), "-test.run=^$")
	w.cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	w.cmd.Stderr = &w.stderr
	pipe, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			w.line(sc.Text())
		}
	}()
	go func() { <-lines; w.exited <- w.cmd.Wait() }()
	t.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			_ = w.cmd.Process.Kill()
		}
	})
	return w
}

func (w *writer) line(l string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch kind, rest, _ := strings.Cut(l, " "); kind {
	case "ready":
		close(w.ready)
	case "listen":
		w.url = rest
		close(w.ready)
	case "ack":
		w.acked[rest] = true
		w.acks++
	case "burst":
		n, _ := strconv.Atoi(rest)
		w.burstAcks = append(w.burstAcks, w.acks)
		select {
		case w.bursts <- n:
		default:
		}
	case "confirmed":
		w.confirmed = append(w.confirmed, rest)
	case "stats":
		w.statsRaw = rest
		w.stats = new(childStats)
		_ = json.Unmarshal([]byte(rest), w.stats)
	case "error":
		w.errs = append(w.errs, rest)
	}
}

// waitReady waits until the process says it is ready (or listening).
func (w *writer) waitReady(t *testing.T) {
	t.Helper()
	select {
	case <-w.ready:
	case err := <-w.exited:
		t.Fatalf("process ended: %v\n%s", err, w.stderr.String())
	case <-time.After(time.Minute):
		t.Fatal("process not ready after a minute")
	}
}

// wait waits for the writer's end and fails unless it exited cleanly.
func (w *writer) wait(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case err := <-w.exited:
		if err != nil {
			t.Fatalf("writer: %v\n%s", err, w.stderr.String())
		}
	case <-time.After(within):
		_ = w.cmd.Process.Kill()
		t.Fatalf("writer still running after %s\n%s", within, w.stderr.String())
	}
}

// keys lists every key of one side.
func keys(t *testing.T, s kv.Store) []string {
	t.Helper()
	var out []string
	cursor := ""
	for {
		res, err := s.List(context.Background(), kv.ListOptions{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res.Keys...)
		if res.Done {
			return out
		}
		cursor = res.Cursor
	}
}

// differing returns the keys among ks whose value differs between the two
// stores (present on one side only, or another value).
func (r *rig) differing(t *testing.T, ks []string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, k := range ks {
		p, perr := r.primary.Get(ctx, k)
		s, serr := r.shadow.Get(ctx, k)
		pMissing, sMissing := errors.Is(perr, kv.ErrNotFound), errors.Is(serr, kv.ErrNotFound)
		switch {
		case perr != nil && !pMissing:
			t.Fatalf("primary %s: %v", k, perr)
		case serr != nil && !sMissing:
			t.Fatalf("shadow %s: %v", k, serr)
		case pMissing != sMissing || !bytes.Equal(p, s):
			out = append(out, k)
		}
	}
	return out
}

// identical fails unless both stores hold the same keys and values.
func (r *rig) identical(t *testing.T) int {
	t.Helper()
	union := map[string]bool{}
	for _, k := range keys(t, r.primary) {
		union[k] = true
	}
	for _, k := range keys(t, r.shadow) {
		union[k] = true
	}
	all := make([]string, 0, len(union))
	for k := range union {
		all = append(all, k)
	}
	if d := r.differing(t, all); len(d) > 0 {
		t.Fatalf("%d of %d keys differ between the stores after settling: %v", len(d), len(all), d)
	}
	return len(all)
}
