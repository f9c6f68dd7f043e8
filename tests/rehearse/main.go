// Command rehearse is `make rehearse`: the bot team's guide
// (docs/bot-guide.md) on one machine, each step as the guide writes it and
// what it does checked (its -help says how, run.go's plan lists the steps).
// It exits non-zero if the stores end apart, a divergence was confirmed
// (none is injected, so any would be made up), the bot misses a key it
// wrote, or a step failed; its reports stay in -dir.
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
	defer stop()
	switch err := run(ctx, os.Args[1:], os.Stdout); {
	case errors.Is(err, errUsage):
		fmt.Fprintf(os.Stderr, "rehearse: %v\n", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintf(os.Stderr, "rehearse: FAIL: %v\n", err)
		os.Exit(1)
	}
}
