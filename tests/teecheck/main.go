// Command tee-check is `make tee-check BOT=path/to/bot`: the bot team's
// local check of the tee, as production runs it (docs/bot-guide.md, step
// 5). It runs the user's own Worker with the tee (`wrangler dev` in the bot's
// folder), the bridge Worker in a second `wrangler dev` over the same local
// KV data (one --persist-to, the namespace ID of the bot's KV binding),
// kvshadow-proxy at the bridge (in-process, stage shadow by default: copies
// verified against the Worker's own KV data, sampled reads compared; -stage
// handover or live routes every call through it), and the embedded
// MongoDB-compatible server. Use the bot at the address it prints; it prints
// the proxy's admin address and token, its counts as they change, and on
// Ctrl-C a verdict: it exits 1 if a divergence was confirmed, naming each key
// that differs, or if a handler wrote the binding around the tee, naming the
// handler (for fetch, its method and path) and its keys (the Worker runs
// under workers/teecheck/entry.js, which watches each invocation's writes to
// the binding and the tee's copies of them), and 2 on a usage mistake.
// (kvshadow-proxy --demo is no tee check: it compares the tee's copies with
// its own emulated Workers KV, which the Worker never wrote.)
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
		fmt.Fprintf(os.Stderr, "tee-check: %v\n", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintf(os.Stderr, "tee-check: FAIL: %v\n", err)
		os.Exit(1)
	}
}
