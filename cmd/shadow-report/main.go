package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/kvshadow/kvshadow/internal/report/cli"
)

func main() {
	// An interrupt stops the scan cleanly: the checkpoint keeps what was
	// done, and the same command resumes it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.ExitCode(err))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cli.Run(ctx, args, os.Getenv, stdout, stderr)
}
