package kvapi_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/internal/syncbuf"
	"github.com/kvshadow/kvshadow/kvapi"
)

// slowPut opens a connection from local (nil: any) and sends a PUT's
// headers and one byte of its body; the rest never comes.
func slowPut(t *testing.T, addr string, local net.IP, key string) net.Conn {
	t.Helper()
	d := net.Dialer{}
	if local != nil {
		d.LocalAddr = &net.TCPAddr{IP: local}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: x\r\n%sContent-Length: 1000\r\n\r\nv", nsPath("values/"+key), auth)
	return c
}

// status reads one response's status from c, waiting at most 30 s.
func status(c net.Conn) (int, []byte) {
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, nil
	}
	defer res.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(res.Body)
	return res.StatusCode, b.Bytes()
}

// TestOneClientCannotTakeEverySlot: a client that opens slow-body PUTs
// without end holds at most its share of the slots (the rest of its
// requests get 503 at once), and another client is still served.
func TestOneClientCannotTakeEverySlot(t *testing.T) {
	f := newFront(t, kvapi.ServeConfig{MaxConcurrent: 8, MaxPerClient: 6, BodyGrace: time.Hour})
	const flood = 20
	refused := make(chan int, flood)
	for i := range flood {
		c := slowPut(t, f.addr, net.IPv4(127, 0, 0, 1), fmt.Sprint("slow", i))
		go func() {
			code, _ := status(c)
			if code == http.StatusServiceUnavailable {
				refused <- code
			}
		}()
	}
	for range flood - 6 {
		<-refused // the flooding client's requests past its 6
	}
	// Another client (another loopback address) is served beside them.
	other := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	c, err := other.Dial("tcp", f.addr)
	if err != nil {
		t.Skipf("no second loopback address to send from: %v", err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n", nsPath("keys"), auth)
	if code, body := status(c); code != http.StatusOK {
		t.Fatalf("another client while one floods: %d %s", code, body)
	}
}

// TestSlowBodyEnds408: a body that does not keep the minimum rate ends
// with 408 in the envelope once the grace is over, freeing its slot.
func TestSlowBodyEnds408(t *testing.T) {
	f := newFront(t, kvapi.ServeConfig{MaxConcurrent: 1, MinBodyRate: 1 << 10, BodyGrace: 50 * time.Millisecond})
	c := slowPut(t, f.addr, nil, "slow")
	code, body := status(c)
	if code != http.StatusRequestTimeout || !strings.Contains(string(body), `"success":false`) || !strings.Contains(string(body), "slower than 1024 bytes a second") {
		t.Fatalf("a body at a byte and then none: %d %s", code, body)
	}
	// Its slot is free again: the only one there is.
	wantOK(t, "after the 408", f.do("GET", nsPath("keys"), nil))
}

// TestUnreadSlowBodyIsCutOff: a body sent slowly to a handler that never
// reads it, which net/http then reads to discard it, is cut off once its
// grace is over: the answer comes, the connection closes and the slot is
// free. The server has no ReadTimeout of its own (the body guard's
// deadline is the body's from the start): without that deadline the
// discard waited for the client for ever.
func TestUnreadSlowBodyIsCutOff(t *testing.T) {
	f := newFront(t, kvapi.ServeConfig{MaxConcurrent: 1, MinBodyRate: 1 << 10, BodyGrace: 50 * time.Millisecond,
		Wrap: func(http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
		}})
	c := slowPut(t, f.addr, nil, "unread")
	if code, _ := status(c); code != http.StatusNoContent {
		t.Fatalf("the unread slow body's answer: %d", code)
	}
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("read = %d, %v; want the server to hang up", n, err)
	}
	if r := f.do("GET", nsPath("keys"), nil); r.status != http.StatusNoContent {
		t.Fatalf("the only slot after the cut-off: HTTP %d", r.status)
	}
}

// TestReadsPastTheBodysEndKeepTheRequest: a handler that reads its body
// past its end (as a decoder that checks for trailing data does) and then
// works longer than the body's grace keeps its request: the ended body sets
// no read deadline on the connection again, which would cut the request's
// context when it passed.
func TestReadsPastTheBodysEndKeepTheRequest(t *testing.T) {
	f := newFront(t, kvapi.ServeConfig{MinBodyRate: 1 << 10, BodyGrace: 300 * time.Millisecond, Wrap: func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			_, _ = r.Body.Read(make([]byte, 1))
			select {
			case <-r.Context().Done():
				w.WriteHeader(http.StatusServiceUnavailable)
			case <-time.After(1500 * time.Millisecond): // well past the grace
				w.WriteHeader(http.StatusNoContent)
			}
		})
	}})
	res, err := http.Post(f.url+nsPath("bulk/get"), "application/json", strings.NewReader(`{"keys":["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("a handler working past the body's grace got %d: its request was cut off", res.StatusCode)
	}
}

// TestConnectionCap: past MaxConnections open connections (idle keep-alive
// ones count), a new one is answered 503 at once, and the log says the cap
// was reached; when one closes, connections are taken again.
func TestConnectionCap(t *testing.T) {
	var logs syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	f := newFront(t, kvapi.ServeConfig{MaxConnections: 3, Logger: log})
	var open []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n", nsPath("keys"), auth)
		if code, _ := status(c); code != http.StatusOK { // served, then idle: still open
			t.Fatalf("connection within the cap: %d", code)
		}
		open = append(open, c)
	}
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	code, body := status(c)
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "maximum of connections") {
		t.Fatalf("a connection past the cap: %d %s", code, body)
	}
	if !strings.Contains(logs.String(), "the listener holds its maximum of connections") || !strings.Contains(logs.String(), "max_connections=3") {
		t.Fatalf("the log says %q", logs.String())
	}
	open[0].Close()
	for {
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n", nsPath("keys"), auth)
		code, _ := status(c)
		c.Close()
		if code == http.StatusOK {
			break // the closed one's place was taken
		}
	}
	for _, c := range open[1:] {
		c.Close()
	}
}
