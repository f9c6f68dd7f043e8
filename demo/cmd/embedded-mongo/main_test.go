package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
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
