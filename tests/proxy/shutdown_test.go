package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// TestSigtermLosesNothing sends SIGTERM to a process under a steady load of
// writes, with no time to drain its lanes: the process exits 0, every write
// it acknowledged is in the primary, and each is in the shadow or in the
// dirty keys it kept for shadow-report. The shadow is slower than the
// writes, so copies are still queued when the signal comes.
func TestSigtermLosesNothing(t *testing.T) {
	bin := build(t)
	em := newEmulator(t, nil)
	db := srv.Database(t)
	dirtyDir := t.TempDir()
	env := em.environment(db)
	env["MONGODB_URI"] = slowURI(t, 20*time.Millisecond)
	journalDir := t.TempDir()
	p := startProcess(t, bin, env, "--stage", "dualwrite", "--drain-timeout", "0s", "--dirty-dir", dirtyDir, "--journal-dir", journalDir)
	client := p.client(t, nil)

	var mu sync.Mutex
	acked := map[string]string{}
	var wg sync.WaitGroup
	started := make(chan struct{})
	var once sync.Once
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10_000; i++ {
				key, value := fmt.Sprintf("load:%d:%05d", w, i), fmt.Sprintf("v%d-%d", w, i)
				if err := client.Put(context.Background(), key, []byte(value), kv.PutOptions{}); err != nil {
					return // the service has stopped accepting
				}
				mu.Lock()
				acked[key] = value
				n := len(acked)
				mu.Unlock()
				if n >= 200 {
					once.Do(func() { close(started) })
				}
			}
		}()
	}
	<-started
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := <-p.exited
	p.exited <- err // for the cleanup's stop
	wg.Wait()
	if err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.log())
	}

	dirty := map[string]bool{}
	if raw, err := os.ReadFile(filepath.Join(dirtyDir, namespace+".keys")); err == nil {
		for _, k := range strings.Fields(string(raw)) {
			dirty[k] = true
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	shadow := shadowStore(t, db, nil)
	copied := 0
	for key, want := range acked {
		got, err := em.store.Get(context.Background(), key)
		if err != nil || string(got) != want {
			t.Fatalf("acknowledged %s=%s; the primary has %q, %v", key, want, got, err)
		}
		v, err := shadow.Get(context.Background(), key)
		switch {
		case err == nil && string(v) == want:
			copied++
		case dirty[key]:
		default:
			t.Fatalf("acknowledged %s: not in the shadow (%q, %v) and not kept as dirty", key, v, err)
		}
	}
	t.Logf("%d writes acknowledged before the service stopped: %d copied, %d kept as dirty", len(acked), copied, len(acked)-copied)
	if !strings.Contains(p.log(), "kvshadow-proxy: stopped") {
		t.Fatalf("no orderly stop in the log:\n%s", p.log())
	}

	// Restarted on its journal, with a shadow that keeps up, the service
	// settles what it left: every acknowledged write reaches the shadow.
	again := startProcess(t, bin, em.environment(db), "--stage", "dualwrite", "--journal-dir", journalDir, "--repair-interval", "200ms")
	if s := again.stats(t); s.Total.Loaded == 0 && copied < len(acked) {
		t.Fatalf("the restart loaded nothing from the journal: %+v", s.Total)
	}
	eventually(t, "every acknowledged write in the shadow", func() bool {
		for key, want := range acked {
			if v, err := shadow.Get(context.Background(), key); err != nil || string(v) != want {
				return false
			}
		}
		return true
	})
	eventually(t, "the settle set empty", func() bool { s := again.stats(t).Total; return s.Dirty == 0 && s.Unsettled == 0 })
}
