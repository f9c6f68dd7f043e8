// Command kvshadow-proxy serves the Workers KV REST API over the dual-write
// store, so that any Workers KV client writes through the migration from
// Workers KV to MongoDB with nothing else changed.
//
//	kvshadow-proxy --demo      # try it: no account needed
//	kvshadow-proxy --help      # flags, environment, admin API, exit codes
//
// See package service for what it guarantees, and docs/runbook.md for how
// to run it, roll a stage out and roll it back.
package main
