// Package settle holds the integration tests of durable settling: writers
// in separate processes go through a dualwrite.Store over the Workers KV
// REST API server (reached through cfkv, the real client, over HTTP) and
// the embedded MongoDB-compatible server (through mongokv), each with its
// settle journal; the processes are killed with SIGKILL or run side by side
// on the same hot keys, and once everything has settled both stores must
// hold the same data. The kill test writes thousands of new keys, more
// than the embedded server (which scans a collection for every query)
// settles in reasonable time: its shadow is a second REST API server.
//
// The fleet test runs writers that also join the control board (in the
// embedded server) with heartbeats that carry their stores' watermarks,
// each reading the others' keys through a slow shadow: no divergence may
// be confirmed that a copy queued, in flight or lost at any of them
// explains, and a key written around the layer is reported once by them
// all. The kill test also checks that the keys the journal named after a
// restart are repaired as known, never reported as divergences.
//
// The writer processes are this test binary run again with KVSHADOW_SETTLE_CHILD
// set (see child_test.go), so that nothing is built.
package settle
