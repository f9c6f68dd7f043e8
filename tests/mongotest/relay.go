package mongotest

import (
	"bytes"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Relay forwards TCP connections to a MongoDB server until it is cut: then
// every connection is closed and new ones are closed on arrival, as a
// network outage looks to the driver; Cut(false) lets them through again.
// A test gives one process its way to the server through a Relay, and cuts
// that process off while the others keep theirs.
type Relay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	dropOn []byte // a connection whose client sends it is closed
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

// NewRelay relays to s and returns it with the URI that reaches s through
// it, failing fast (1 s) when the server cannot be selected. The test's
// cleanup closes it.
func NewRelay(t testing.TB, s *Server) (*Relay, string) {
	t.Helper()
	u, err := url.Parse(s.URI())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Relay{ln: ln, target: u.Host, conns: map[net.Conn]bool{}}
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(func() { ln.Close(); r.Cut(true); r.wg.Wait() })
	u.Host = ln.Addr().String()
	q := u.Query()
	q.Set("serverSelectionTimeoutMS", "1000")
	q.Set("connectTimeoutMS", "1000")
	u.RawQuery = q.Encode()
	return r, u.String()
}

func (r *Relay) accept() {
	defer r.wg.Done()
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		cut := r.cut
		r.mu.Unlock()
		if cut {
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", r.target)
		if err != nil {
			in.Close()
			continue
		}
		r.mu.Lock()
		r.conns[in], r.conns[out] = true, true
		r.mu.Unlock()
		r.wg.Add(2)
		go r.pipe(out, in, true)
		go r.pipe(in, out, false)
	}
}

func (r *Relay) pipe(dst, src net.Conn, fromClient bool) {
	defer r.wg.Done()
	if fromClient {
		r.relayClient(dst, src)
	} else {
		_, _ = io.Copy(dst, src)
	}
	dst.Close()
	src.Close()
	r.mu.Lock()
	delete(r.conns, dst)
	delete(r.conns, src)
	r.mu.Unlock()
}

// Cut starts (true) or ends (false) the outage.
func (r *Relay) Cut(cut bool) {
	r.mu.Lock()
	r.cut = cut
	var open []net.Conn
	if cut {
		for c := range r.conns {
			open = append(open, c)
		}
	}
	r.mu.Unlock()
	for _, c := range open {
		c.Close()
	}
}

// DropOn makes the relay close every connection whose client sends marker
// (nil: none), the connection on which it sends it too: a test makes one
// command fail, as a network that breaks mid-command does, while the
// connect and every other command work.
func (r *Relay) DropOn(marker []byte) {
	r.mu.Lock()
	r.dropOn = bytes.Clone(marker)
	r.mu.Unlock()
}

// relayClient copies what the client sends to the server until either
// closes, or the client sends the DropOn marker (looked for across reads).
func (r *Relay) relayClient(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	var tail []byte // the end of the last read, for a marker cut in two
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.mu.Lock()
			marker := r.dropOn
			r.mu.Unlock()
			seen := append(tail, buf[:n]...)
			if len(marker) > 0 && bytes.Contains(seen, marker) {
				return
			}
			tail = append(tail[:0], seen[max(0, len(seen)-len(marker)):]...)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
