package mongotest

import (
	"bytes"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Relay is a MongoDB server as one process reaches it: a TCP relay on a
// port of its own, so that a test cuts one process off while the others
// keep their way to the server.
type Relay struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener // nil while Down
	cut          bool
	dropOn       []byte // a connection whose client sends it is closed
	conns        map[net.Conn]bool
	wg           sync.WaitGroup
}

// NewRelay relays to s and returns it with the URI that reaches s through
// it, failing fast (1 s) when the server cannot be selected. The test's
// cleanup closes it. It skips the test when s's URI is not a mongodb://
// URI with one host.
func NewRelay(t testing.TB, s *Server) (*Relay, string) {
	t.Helper()
	u, err := url.Parse(s.URI())
	if err != nil || strings.Contains(u.Host, ",") || u.Scheme != "mongodb" {
		t.Skip("the relay needs a mongodb:// URI with one host")
	}
	r := &Relay{addr: "127.0.0.1:0", target: u.Host, conns: map[net.Conn]bool{}}
	r.Up(t)
	r.addr = r.ln.Addr().String()
	t.Cleanup(r.Down)
	u.Host = r.addr
	q := u.Query()
	q.Set("serverSelectionTimeoutMS", "1000")
	q.Set("connectTimeoutMS", "1000")
	u.RawQuery = q.Encode()
	return r, u.String()
}

// Addr is the relay's address, the host of its URI.
func (r *Relay) Addr() string { return r.addr }

// Up listens on the relay's address again after Down.
func (r *Relay) Up(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.ln = ln
	r.mu.Unlock()
	r.wg.Add(1)
	go r.accept(ln)
}

// Down stops listening and closes every connection, and waits for the
// relay's goroutines: the server looks down (connections refused) until Up.
func (r *Relay) Down() {
	r.mu.Lock()
	if r.ln != nil {
		r.ln.Close()
		r.ln = nil
	}
	open := r.open()
	r.mu.Unlock()
	for _, c := range open {
		c.Close()
	}
	r.wg.Wait()
}

// open lists the connections; under mu.
func (r *Relay) open() []net.Conn {
	var open []net.Conn
	for c := range r.conns {
		open = append(open, c)
	}
	return open
}

func (r *Relay) accept(ln net.Listener) {
	defer r.wg.Done()
	for {
		in, err := ln.Accept()
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

// Cut starts (true) or ends (false) a network outage as the driver sees it:
// every connection closed, new ones closed on arrival.
func (r *Relay) Cut(cut bool) {
	r.mu.Lock()
	r.cut = cut
	var open []net.Conn
	if cut {
		open = r.open()
	}
	r.mu.Unlock()
	for _, c := range open {
		c.Close()
	}
}

// DropOn makes the relay close every connection on which the client sends
// marker (nil: none): one command fails as in a network that breaks
// mid-command, while every other works.
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
