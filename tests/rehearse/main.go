// Command rehearse is `make rehearse`: the bot team's guide
// (docs/bot-guide.md) on one machine. The bot Worker runs in workerd
// (miniflare) in tee mode over a KV namespace; the bridge Worker serves that
// same namespace as the primary of kvshadow-proxy, which copies to the
// embedded MongoDB-compatible server; bot traffic runs between the steps,
// and every stage is walked through the handover to live and back, then on
// to complete, ending with a parity report. The admin calls and shadow-report
// runs are the guide's own command lines, run as written (a test keeps the
// two in step). It exits non-zero if the stores end apart (an acknowledged
// write lost on one side), a divergence was confirmed (none is injected, so
// any would be made up), or a step failed.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "rehearse: FAIL: %v\n", err)
		os.Exit(1)
	}
}
