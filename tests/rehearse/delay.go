package main

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// delayLink is a TCP proxy that makes a service look farther away: every
// chunk of bytes, each way, is delivered oneWay after it arrived, in order
// (a round trip costs twice oneWay, as over a network link). It counts the
// connections it accepted, which the benchmark reads as the sockets a bot
// invocation opened.
type delayLink struct {
	ln       net.Listener
	target   string
	oneWay   time.Duration
	accepted atomic.Int64
	wg       sync.WaitGroup
	ctx      context.Context
	cancel   context.CancelFunc
}

func startDelayLink(target string, oneWay time.Duration) (*delayLink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &delayLink{ln: ln, target: target, oneWay: oneWay, ctx: ctx, cancel: cancel}
	l.wg.Add(1)
	go l.serve()
	return l, nil
}

func (l *delayLink) addr() string { return l.ln.Addr().String() }

func (l *delayLink) serve() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.accepted.Add(1)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.link(c)
		}()
	}
}

func (l *delayLink) link(c net.Conn) {
	defer c.Close()
	t, err := net.Dial("tcp", l.target)
	if err != nil {
		return
	}
	defer t.Close()
	stop := context.AfterFunc(l.ctx, func() { c.Close(); t.Close() })
	defer stop()
	done := make(chan struct{}, 2)
	go func() { l.pipe(t, c); done <- struct{}{} }()
	go func() { l.pipe(c, t); done <- struct{}{} }()
	<-done
}

// pipe copies src to dst, each chunk delivered oneWay after it was read.
func (l *delayLink) pipe(dst, src net.Conn) {
	type chunk struct {
		b  []byte
		at time.Time
	}
	q := make(chan chunk, 1024)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{buf[:n], time.Now().Add(l.oneWay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for ch := range q {
		time.Sleep(time.Until(ch.at))
		if _, err := dst.Write(ch.b); err != nil {
			break
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	for range q { // let the reader end
	}
	_, _ = io.Copy(io.Discard, src)
}

func (l *delayLink) close() {
	l.cancel()
	_ = l.ln.Close()
	l.wg.Wait()
}
