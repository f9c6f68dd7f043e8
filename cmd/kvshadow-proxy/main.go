package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/kvshadow/kvshadow/service"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-signals
		cancel() // the first signal drains
		<-signals
		fmt.Fprintln(os.Stderr, "kvshadow-proxy: second signal: exiting now, without draining")
		os.Exit(service.ExitError)
	}()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(service.ExitCode(err))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return service.Main(ctx, args, os.Getenv, stdout, stderr)
}
