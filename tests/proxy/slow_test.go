package proxy_test

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// slowURI returns srv's URI reached through a loopback relay that holds
// every chunk the client sends for delay: a shadow slower than the writes.
func slowURI(t *testing.T, delay time.Duration) string {
	t.Helper()
	u, err := url.Parse(srv.URI())
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); relay(out, in, delay); out.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	u.Host = ln.Addr().String()
	return u.String()
}

// relay copies src to dst, each chunk after delay.
func relay(dst io.Writer, src io.Reader, delay time.Duration) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			time.Sleep(delay)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
