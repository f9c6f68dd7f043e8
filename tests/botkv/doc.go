// Package botkv runs a Go bot's store against the real backends: package
// botkv's Open, from a test environment as a bot's deployment gives it,
// over the Workers KV REST API emulator (kvapi over memory, reached by
// cfkv through cloudflare-go) and the embedded MongoDB-compatible server
// (tests/mongotest), with the bot's store shape through botkv.Adapter.
package botkv
