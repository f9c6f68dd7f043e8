package prometheus_test

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// relay forwards TCP connections to the MongoDB server until it is cut:
// then every connection is closed and new ones are closed on arrival, as a
// network outage looks to the driver; restore lets them through again.
type relay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

// newRelay relays to srv and returns it with the URI that reaches srv
// through it, failing fast when the server cannot be selected.
func newRelay(t *testing.T) (*relay, string) {
	t.Helper()
	u, err := url.Parse(srv.URI())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, target: u.Host, conns: map[net.Conn]bool{}}
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(func() { ln.Close(); r.setCut(true); r.wg.Wait() })
	u.Host = ln.Addr().String()
	q := u.Query()
	q.Set("serverSelectionTimeoutMS", "1000")
	q.Set("connectTimeoutMS", "1000")
	u.RawQuery = q.Encode()
	return r, u.String()
}

func (r *relay) accept() {
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
		go r.pipe(out, in)
		go r.pipe(in, out)
	}
}

func (r *relay) pipe(dst, src net.Conn) {
	defer r.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	r.mu.Lock()
	delete(r.conns, dst)
	delete(r.conns, src)
	r.mu.Unlock()
}

// setCut starts (true) or ends (false) the outage.
func (r *relay) setCut(cut bool) {
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
