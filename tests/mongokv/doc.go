// Package mongokv holds only tests: the integration tests and benchmarks of
// backends/mongokv: the kv conformance suite through the real driver, the
// stored documents read back raw, connection sharing and failure, expiry
// sweeps, and round trips per operation. They run against the embedded
// FerretDB that mongotest starts, or the MongoDB that MONGODB_URI names.
package mongokv
