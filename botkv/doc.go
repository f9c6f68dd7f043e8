// Package botkv is what a Go bot imports to adopt kvshadow: Open builds
// the production store from the environment kvshadow-proxy reads, with
// the proxy's own assembly of a namespace (package assembly), Adapter
// gives it the shape of the store most Go bots share, and WaitSettled
// waits until both stores hold what was written. docs/go-bot.md is the
// guide: the wiring, the environment's table, a start with MongoDB down,
// tests (package botkvtest) and the cost of a store.
//
//	store, err := botkv.Open(ctx, botkv.Config{})   // the environment
//	kvs, err := store.Adapter(storage.ErrNotFound) // the bot's own sentinel
//	defer store.Close(ctx)                         // drains the lanes
//
// # The environment
//
// The variables mean what they mean to kvshadow-proxy: CLOUDFLARE_ACCOUNT_ID,
// CLOUDFLARE_KV_NAMESPACE_ID (one), CLOUDFLARE_API_TOKEN, MONGODB_URI
// (required), CLOUDFLARE_BASE_URL, MONGODB_DB ("miti99bot" whatever the
// URI names, as the JavaScript bot's store), KVSHADOW_KEY_SECRET, and, for
// the proxy's flags of the same names, KVSHADOW_STAGE, KVSHADOW_INSTANCE,
// KVSHADOW_JOURNAL_DIR, KVSHADOW_CONSISTENCY_WINDOW, KVSHADOW_COMPARE_RATE
// and KVSHADOW_BREAKER_OPEN_TIMEOUT.
// Each is read trimmed; every wrong one fails Open before any I/O with a
// *VarError naming it (all at once), and every setting a store refuses at
// start with one too; each matches ErrConfig.
//
// # What Open starts, and Close stops
//
// kvshadow-proxy's store for one namespace: cfkv (the primary), mongokv
// (the shadow, on the process's MongoDB clients for the URI, shared by
// every store), the dual-write store with its breaker, lanes, telemetry
// and settle journal, the shadow's sweeper, and a control.Follower that
// keeps it on the stage document with a heartbeat, so that the operator
// moves the bot and the proxies as one fleet. Its goroutines run until
// Close, which a bot's tests must call (t.Cleanup).
//
// When MongoDB does not answer at start, Open runs the stage kept in
// KVSHADOW_JOURNAL_DIR if Workers KV is authoritative in it (off to
// handover), detached, and otherwise fails with ErrMongoDBDown; a login
// MongoDB refuses is a *VarError naming MONGODB_URI.
package botkv
