package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kv-emulator:", err)
		if errors.As(err, new(usageError)) {
			fmt.Fprintln(os.Stderr, "Run kv-emulator -help for the flags.")
		}
	}
	os.Exit(exitCode(err))
}
