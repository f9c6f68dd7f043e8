// Package botkv is what a Go bot imports to adopt kvshadow: Open builds
// the production store from the environment kvshadow-proxy reads, Adapter
// gives it the shape of the store most Go bots share, and WaitSettled
// waits until both stores hold what was written (docs/go-bot.md is the
// guide).
//
//	store, err := botkv.Open(ctx, botkv.Config{})   // the environment below
//	kvs, err := store.Adapter(storage.ErrNotFound) // the bot's own sentinel
//	defer store.Close(ctx)                         // drains the lanes
//
// # The environment
//
// One table for the bot and the proxy: the same variables mean the same,
// and where the proxy takes a flag the bot reads the variable named.
//
//	variable                      kvshadow-proxy          meaning (default)
//	CLOUDFLARE_ACCOUNT_ID         same, or --account      the Workers KV account (required)
//	CLOUDFLARE_KV_NAMESPACE_ID    same, or --namespace    the namespace, one ID (required)
//	CLOUDFLARE_API_TOKEN          same, or --cf-token-file  Workers KV's API token (required; Config.CFTokenFile)
//	CLOUDFLARE_BASE_URL           same, or --primary-url  the API root: an emulator's, a bridge Worker's (Cloudflare's)
//	MONGODB_URI                   same, or --mongo-uri-file  the shadow's connection string (required; Config.MongoURIFile)
//	MONGODB_DB                    same, or --mongo-db     the shadow database, where the stage document lives too (miti99bot)
//	KVSHADOW_KEY_SECRET           same, or --key-secret-file  the HMAC secret of redacted keys, shared by the fleet (one per process; Config.KeySecretFile)
//	KVSHADOW_STAGE                --stage                 the stage written when there is no stage document yet (off)
//	KVSHADOW_INSTANCE             --instance              the instance's name on the control board (host:pid)
//	KVSHADOW_JOURNAL_DIR          --journal-dir           the settle journal's directory, <namespace>.journal in it (none: in memory)
//	KVSHADOW_CONSISTENCY_WINDOW   --consistency-window    how long Workers KV may read stale; 0 means none (60s)
//	KVSHADOW_COMPARE_RATE         --compare-rate          the share of keys whose reads are compared (0.05)
//
// MONGODB_DB is "miti99bot" whatever database the URI names (the
// JavaScript bot's MongoKVStore opens "miti99bot" whatever its URI says);
// Open warns when the URI names another. Each variable is read trimmed; a
// wrong one fails Open before any I/O with a *VarError naming it (all of
// them at once), which matches ErrConfig.
//
// # What Open starts
//
// A Store is kvshadow-proxy's store for one namespace: cfkv (the primary),
// mongokv (the shadow), the dual-write store with its breaker and lanes,
// its spans and metrics (dualwriteotel, on the global providers unless
// WithTracerProvider and WithMeterProvider say otherwise), its settle
// journal, the shadow's sweeper, and a control.Follower that applies every
// change of the stage document and writes the instance's heartbeat, so
// that the operator moves the bot and the proxies as one fleet and a flip
// waits for the bot's lanes and dirty keys too; the heartbeat carries the
// store's watermark, and the store reads the others', so that no instance
// confirms a divergence another's copy explains (control.Fleet). Its
// goroutines: the
// dual-write store's 16 lane workers and 3 of its own (4 with a journal),
// the sweeper's 1, the follower's 1 (22 in all, measured by tests/botkv),
// and the MongoDB drivers' monitors. They run until Close, which a bot's
// tests must call (t.Cleanup) as they would close a database. Each time
// the store runs a new stage of the document, the stage is kept in the
// file "stage" of KVSHADOW_JOURNAL_DIR (control.KeepStage), as
// kvshadow-proxy keeps its own in --journal-dir.
//
// # Starting with MongoDB down
//
// Open waits for MongoDB at most 15 s: the connect and the read of the
// stage document together (less when ctx ends first, which fails Open).
// When MongoDB has not answered by then, and the stage file in
// KVSHADOW_JOURNAL_DIR names a stage in which Workers KV is authoritative
// (off, dualwrite, shadow, handover: control.ServesDetached), Open starts
// in that stage, detached, as kvshadow-proxy does: it logs one warning
// with the reason (the hosts that do not answer, the stage it serves, what
// it does next; mongokv and the follower do not say it again; a connect
// that works followed by a read of the stage document that fails is said
// as such, and the copies to MongoDB go on), reads and
// writes go to Workers KV, their copies to MongoDB fail and their keys
// stay dirty (Stats, DirtyKeys, the journal), and the follower tries the
// stage document at every poll; once it reads it, it follows it (walking
// one stage at a time if it moved on; on a board with no document yet it
// writes the stage it serves, not KVSHADOW_STAGE), logs the join in one
// info line, and the dirty keys are repaired as MongoDB answers. Detached reports whether the
// document has not been read yet. Otherwise (no KVSHADOW_JOURNAL_DIR, no
// stage kept there, or a stage from live on, where MongoDB's authority
// comes from the document alone) Open fails with an error matching
// ErrMongoDBDown that says which, and starts nothing; a login MongoDB
// refuses fails it with a *VarError naming MONGODB_URI.
package botkv
