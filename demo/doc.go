// Command demo is kvshadow's main job on embedded defaults: the whole
// migration from Workers KV to MongoDB on one machine, with nothing to
// install or configure.
//
// It starts the Workers KV REST API emulator (over memory, with realistic
// latency and an eventual-consistency window) and an embedded
// MongoDB-compatible server (FerretDB, data under -dir, database
// "miti99bot"), both on loopback, and kvshadow-proxy over them (package
// service, in-process; its stage document in MongoDB); runs a bot-like
// workload (wordle, loldle-emoji, trading, ... through namespaces) through
// the proxy over HTTP with cloudflare-go, as any Workers KV client would;
// walks the stages through the proxy's admin API; takes the shadow down half
// way and brings it back (the breaker opens, dirty keys pile up, the breaker
// closes, repair catches up); flips to live (MongoDB authoritative) under
// traffic once the dirty keys are repaired, and back to shadow; injects a
// few divergences by writing around the layer; and
// ends with shadow-report over both stores: a terminal summary and an HTML
// page. It exits 0 only when everything behaved as designed, so the demo is
// also a test.
//
// It lives in a module of its own because it embeds FerretDB, which no
// library user should compile.
package main
