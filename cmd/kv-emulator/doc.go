// Command kv-emulator serves the Workers KV REST API on loopback, over an
// in-memory store, so that any Workers KV REST client (curl, cloudflare-go,
// other SDKs and CLIs) can be pointed at it instead of Cloudflare.
//
//	kv-emulator -addr 127.0.0.1:8787 -namespace bot-kv -token dev-token
//
// It prints the base URL and the CLOUDFLARE_* variables that point a client
// at it (never the token). Keys live in memory and vanish when it stops.
//
// Flags:
//
//	-addr                 listen address; loopback only (default 127.0.0.1:8787)
//	-account              the only account ID served; empty serves any
//	-namespace            namespace IDs served, comma-separated (default kv-emulator)
//	-token                API token required as "Authorization: Bearer"; empty requires none
//	-latency              added to every request
//	-write-rate-limit     refuse a second write to a key within a second (429)
//	-fail-rate            share of requests answered with -fail-status (0..1)
//	-fail-status          status of injected failures (default 503)
//	-consistency-window   how long an edge location (X-Kvapi-Location header) serves what it cached
//	-empty-pages          answer each list page that is not the last with an empty page first
//
// It listens on loopback only: the API has no TLS here, and the token would
// cross the network in clear.
package main
