package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/kv"
)

// The server it starts is one a MongoDB client can use, at the URI printed.
func TestServesAtThePrintedURI(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out bytes.Buffer
	uris := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-dir", t.TempDir()}, &out, &bytes.Buffer{}, func(u string) { uris <- u })
	}()
	var uri string
	select {
	case uri = <-uris:
	case err := <-done:
		t.Fatalf("run: %v", err)
	}
	client, err := mongokv.NewClient(mongokv.ClientConfig{URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close(context.Background())
	store, err := client.Store(mongokv.Config{Database: "experiments"})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, "wordle:games:1", []byte("x"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "export MONGODB_URI="+uri+"\n") {
		t.Errorf("output does not give the URI:\n%s", out.String())
	}
}

func TestUsage(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), []string{"-help"}, &out, &out, nil); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "make mongo") {
		t.Errorf("-help: %v\n%s", err, out.String())
	}
	if err := run(t.Context(), []string{"extra"}, &out, &out, nil); !errors.Is(err, errUsage) {
		t.Errorf("extra argument: %v", err)
	}
}

// Started with -listen, it serves at that address, and started again with
// the same -listen and -dir it serves the same URI with the data kept.
func TestRestartsOnTheGivenAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	serve := func(work func(uri string)) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		uris, done := make(chan string, 1), make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"-dir", dir, "-listen", addr}, &bytes.Buffer{}, &bytes.Buffer{}, func(u string) { uris <- u })
		}()
		select {
		case uri := <-uris:
			if !strings.Contains(uri, "//"+addr+"/") {
				t.Errorf("URI %q is not at -listen %s", uri, addr)
			}
			work(uri)
		case err := <-done:
			t.Fatalf("run -listen %s: %v", addr, err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	use := func(uri string, do func(kv.Store) error) {
		client, err := mongokv.NewClient(mongokv.ClientConfig{URI: uri})
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close(context.Background())
		store, err := client.Store(mongokv.Config{Database: "experiments"})
		if err != nil {
			t.Fatal(err)
		}
		if err := do(store); err != nil {
			t.Fatal(err)
		}
	}
	serve(func(uri string) {
		use(uri, func(s kv.Store) error { return s.Put(t.Context(), "wordle:games:1", []byte("kept"), kv.PutOptions{}) })
	})
	serve(func(uri string) {
		use(uri, func(s kv.Store) error {
			v, err := s.Get(t.Context(), "wordle:games:1")
			if err == nil && string(v) != "kept" {
				err = fmt.Errorf("read %q after the restart", v)
			}
			return err
		})
	})
}
