// Command rehearse is `make rehearse`: the bot team's guide
// (docs/bot-guide.md) on one machine. A bot with the real bot's storage
// shape and flags (its createStore over STORAGE_PRIMARY, DUAL_WRITE and
// MONGODB_URI, its own DualKVStore and drift-verifier; workers/test/realbot)
// and the bridge Worker run in workerd (miniflare) over one KV namespace,
// the bridge serving it as the primary of kvshadow-proxy, which copies to
// the embedded MongoDB-compatible server. It starts from the bot as it runs
// today (its own dual write on, a retry queue in Workers KV), deploys the
// bot with the guide's flags step by step, walks every stage through the
// handover to live and back, then on to complete, checks parity, runs the
// recommended end state (the bot on the proxy through kvshadowBinding), then
// moves the bot to its own MongoKVStore (step 13: every key it ever wrote
// read back from MongoDB) and retires the proxy (step 14: stopped, its
// collections dropped, the bot still working). The admin calls and
// shadow-report runs are the guide's own command lines, run as written (a
// test keeps the two in step). It exits non-zero if the stores end apart,
// a divergence was confirmed (none is injected, so any would be made up),
// the bot misses a key it wrote, or a step failed; its reports stay in -dir.
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
