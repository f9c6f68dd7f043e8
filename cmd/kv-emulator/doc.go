// Command kv-emulator serves the Workers KV REST API on loopback, over
// in-memory namespaces, so that any Workers KV REST client (wrangler, curl,
// cloudflare-go, other SDKs) can be pointed at it instead of Cloudflare.
//
//	KV_EMULATOR_TOKEN=dev-token kv-emulator -addr 127.0.0.1:8787 -namespace bot-kv
//	kv-emulator -unauthenticated
//
// It prints the base URL and the environment that points a client at it:
// CLOUDFLARE_API_BASE_URL (what wrangler reads), CLOUDFLARE_BASE_URL,
// CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_KV_NAMESPACE_ID (what shadow-report
// and cfkv read), and, when it requires no token, a placeholder
// CLOUDFLARE_API_TOKEN, so that the line works as it is. It never prints
// the token. Keys live in memory and vanish when it stops; namespaces can be
// created, renamed and deleted through the API, as wrangler does.
//
// The client token comes from $KV_EMULATOR_TOKEN or -token-file, never from
// a flag (a flag is visible in ps). Without one it refuses to start unless
// told -unauthenticated. It serves through kvapi.HTTPServer, with the same
// hardening as the proxy: timeouts, a bound on concurrent requests, body
// limits, envelopes on every refusal.
//
// Its flags (latency, a write rate limit, injected failures, a consistency
// window, empty list pages, a memory budget) are listed by -help.
//
// -help prints this and exits 0; a mistake on the command line exits 2, any
// other failure 1.
//
// It listens on loopback only: the API has no TLS here, and the token would
// cross the network in clear.
package main
