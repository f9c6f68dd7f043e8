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
// Flags:
//
//	-addr                 listen address; loopback only (default 127.0.0.1:8787)
//	-account              the only account ID served; empty serves any
//	-namespace            namespace IDs served from the start, comma-separated (default kv-emulator)
//	-token-file           file holding the client token (else $KV_EMULATOR_TOKEN)
//	-unauthenticated      serve without a client token (loopback only)
//	-memory-budget SIZE   the process's memory budget (512MiB): past it a
//	                      request gets 503 with Retry-After
//	-latency              added to every request
//	-write-rate-limit     refuse a second write to a key within a second (429)
//	-fail-rate            share of requests answered with -fail-status (0..1)
//	-fail-status          status of injected failures, 500..599 (default 503)
//	-consistency-window   how long an edge location (X-Kvapi-Location header) serves what it cached
//	-empty-pages          answer each list page that is not the last with an empty page first
//
// -help prints this and exits 0; a mistake on the command line exits 2, any
// other failure 1.
//
// It listens on loopback only: the API has no TLS here, and the token would
// cross the network in clear.
package main
