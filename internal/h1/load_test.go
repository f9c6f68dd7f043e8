package h1_test

import (
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/kvshadow/kvshadow/internal/h1"
)

// TestConcurrentCallersNeverShareAConnection: every answer must be its
// own request's; a connection handed to two callers at once interleaves
// their requests and mixes their answers.
func TestConcurrentCallersNeverShareAConnection(t *testing.T) {
	both(t, func(t *testing.T, useTLS bool) {
		s := newServer(t, useTLS, func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			runtime.Gosched()
			_, _ = io.WriteString(w, r.URL.Path+"="+string(b))
		})
		tr := s.transport(t, h1.Config{MaxIdlePerHost: 8})
		const callers, each = 32, 40
		var wg sync.WaitGroup
		errs := make(chan error, callers)
		for g := range callers {
			wg.Go(func() {
				for i := range each {
					id := fmt.Sprintf("/%d/%d", g, i)
					method, body := http.MethodGet, ""
					if i%2 == 1 {
						method, body = http.MethodPut, strconv.Itoa(g*each+i)
					}
					req, _ := http.NewRequest(method, s.URL+id, stringsReader(body))
					resp, err := tr.RoundTrip(req)
					if err != nil {
						errs <- err
						return
					}
					got, err := io.ReadAll(resp.Body)
					_ = resp.Body.Close()
					if want := id + "=" + body; err != nil || string(got) != want {
						errs <- fmt.Errorf("answer %q (%v), want %q", got, err, want)
						return
					}
					if i%10 == 0 && g%8 == 0 {
						tr.CloseIdleConnections()
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

func stringsReader(s string) io.Reader {
	if s == "" {
		return nil
	}
	return &onlyReader{s: s}
}

// onlyReader hides strings.Reader's WriterTo and length, as a caller's
// stream would; http.NewRequest then sends it chunked.
type onlyReader struct{ s string }

func (r *onlyReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p, r.s)
	r.s = r.s[n:]
	return n, nil
}

// pattern is an endless, cheap, deterministic stream of bytes.
type pattern struct{ rng *rand.ChaCha8 }

func newPattern(seed byte) io.Reader {
	return pattern{rand.NewChaCha8([32]byte{seed})}
}

func (p pattern) Read(b []byte) (int, error) { return p.rng.Read(b) }

func digest(r io.Reader, n int64) string {
	h := sha256.New()
	_, _ = io.CopyN(h, r, n)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestLargeBodiesStream sends 25 MiB up and reads 25 MiB down, and checks
// that the process allocated far less than one body meanwhile: neither
// body is copied whole on its way.
func TestLargeBodiesStream(t *testing.T) {
	const size = 25 << 20
	both(t, func(t *testing.T, useTLS bool) {
		upWant, downWant := digest(newPattern(1), size), digest(newPattern(2), size)
		s := newServer(t, useTLS, func(w http.ResponseWriter, r *http.Request) {
			if got := digest(r.Body, size+1); got != upWant {
				http.Error(w, "upload digest "+got, http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Length", strconv.Itoa(size))
			_, _ = io.CopyN(w, newPattern(2), size)
		})
		tr := s.transport(t, h1.Config{})
		get(t, tr, s.URL+"/warm-up") // the first connection's buffers are not the bodies'
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		req, _ := http.NewRequest(http.MethodPut, s.URL, io.LimitReader(newPattern(1), size))
		req.ContentLength = size
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		got := digest(resp.Body, size+1)
		_ = resp.Body.Close()
		runtime.ReadMemStats(&after)
		if got != downWant {
			t.Fatal("the downloaded body differs from what the server sent")
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/8 && !raceEnabled {
			t.Errorf("a 25 MiB round trip each way allocated %d bytes: a body was copied whole", alloc)
		}
	})
}

// TestNoGoroutinePerConnection: after a burst of concurrent round trips
// whose connections stay idle in the pool, the process holds no more
// goroutines than before plus the server's one per open connection
// (net/http's Transport keeps two per idle connection).
func TestNoGoroutinePerConnection(t *testing.T) {
	both(t, func(t *testing.T, useTLS bool) {
		s := newServer(t, useTLS, answerOK)
		tr := s.transport(t, h1.Config{})
		get(t, tr, s.URL)
		closeIdle(t, s, tr)
		before := runtime.NumGoroutine()
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 50 {
			wg.Go(func() {
				<-start
				for range 5 {
					get(t, tr, s.URL)
				}
			})
		}
		close(start)
		wg.Wait()
		_, open, _ := s.counts()
		if open < 2 {
			t.Fatalf("the burst left %d connections open; it is meant to leave several idle", open)
		}
		waitFor(t, fmt.Sprintf("goroutines back to %d plus the server's %d", before, open), func() bool {
			_, open, _ = s.counts()
			return runtime.NumGoroutine() <= before+open
		})
	})
}
