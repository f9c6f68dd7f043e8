// Command kv-emulator serves the Workers KV REST API on loopback, over
// in-memory namespaces, so that any Workers KV REST client (wrangler, curl,
// cloudflare-go, other SDKs) can be pointed at it instead of Cloudflare.
// -help (helpText) says how to run it, where its token comes from and what
// it prints; its flags (latency, a write rate limit, injected failures, a
// consistency window, empty list pages, a memory budget) are listed there.
//
// Keys live in memory and vanish when it stops; namespaces can be created,
// renamed and deleted through the API, as wrangler does. It serves through
// kvapi.HTTPServer, with the same hardening as the proxy: timeouts, a bound
// on concurrent requests, body limits, envelopes on every refusal. It
// listens on loopback only: the API has no TLS here, and the token would
// cross the network in clear.
//
// -help exits 0; a mistake on the command line exits 2, any other failure 1.
package main
