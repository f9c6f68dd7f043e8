// Package wrangler runs Cloudflare's own command line, wrangler (pinned in
// package.json and its lockfile; make integration runs npm ci here), against
// a kvshadow-proxy started as a team would start it, not its demo: an
// emulated Workers KV account as the primary and the embedded
// MongoDB-compatible server as the shadow. wrangler gets only the
// environment the proxy printed at start, and the clients' token: its kv key
// put, get and list work through the proxy; a TTL under a minute is refused
// in Cloudflare's words; kv namespace create is told that the proxy serves a
// fixed set of namespaces, and where to change it.
package wrangler
