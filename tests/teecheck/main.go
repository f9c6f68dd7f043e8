// Command tee-check is `make tee-check BOT=path/to/bot`: the bot team's
// local check of the tee, as production runs it (docs/bot-guide.md, step
// 5). It runs the user's own Worker with the tee (`wrangler dev` in the bot's
// folder), the bridge Worker in a second `wrangler dev` over the same local
// KV data (one --persist-to, the namespace ID of the bot's KV binding),
// kvshadow-proxy at the bridge (in-process, stage shadow: copies verified
// against the Worker's own KV data, sampled reads compared), and the
// embedded MongoDB-compatible server. Use the bot at the address it prints;
// it prints the proxy's counts as they change, and on Ctrl-C a verdict: it
// exits non-zero if a divergence was confirmed, which on one machine with
// nothing injected means a write the tee, the bridge or the proxy got wrong.
// (kvshadow-proxy --demo is no tee check: it compares the tee's copies with
// its own emulated Workers KV, which the Worker never wrote.)
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
		fmt.Fprintf(os.Stderr, "tee-check: FAIL: %v\n", err)
		os.Exit(1)
	}
}
