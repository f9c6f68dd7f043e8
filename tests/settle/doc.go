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
// The writer processes are this test binary run again with KVSHADOW_SETTLE_CHILD
// set (see child_test.go), so that nothing is built.
package settle
