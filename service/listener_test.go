package service

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/kvshadow/kvshadow/internal/syncbuf"
)

// A caller that hands the front's address out before the service starts
// holds it with WithListener: no other process can bind it meanwhile (a
// port handed over by number, closed and bound again, could be lost), and
// the service serves on it; without tokens it must be loopback, as
// --listen must, and Run closes it either way.
func TestServesOnTheCallersListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if thief, err := net.Listen("tcp", ln.Addr().String()); err == nil {
		thief.Close()
		t.Fatal("another listener bound the address the caller holds")
	}
	c, err := Parse([]string{"--demo", "--admin-listen", "127.0.0.1:0"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	up, done := make(chan Listening, 1), make(chan error, 1)
	var out, logs syncbuf.Buffer
	go func() {
		done <- Run(ctx, c, &out, &logs, WithListener(ln), WithListening(func(l Listening) { up <- l }))
	}()
	select {
	case at := <-up:
		if want := "http://" + ln.Addr().String(); at.Origin != want {
			t.Errorf("the front serves at %s, want %s", at.Origin, want)
		}
		resp, err := http.Get(at.Origin + "/client/v4/") // any answer: the front serves there
		if err != nil {
			t.Fatalf("GET on the caller's listener: %v", err)
		}
		resp.Body.Close()
	case err := <-done:
		t.Fatalf("Run: %v\n%s", err, logs.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("after Run, Accept: %v, want the listener closed", err)
	}

	open, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := Run(t.Context(), c, &out, &logs, WithListener(open)); !errors.Is(err, ErrUsage) {
		t.Errorf("the demo on a listener beyond loopback: %v, want a usage error", err)
	}
	if _, err := open.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("after a refused Run, Accept: %v, want the listener closed", err)
	}
}
