// Package memory is the reference kv.Store: an in-process map with the exact
// behaviour of the contract, an injectable clock so that expiry is tested
// without sleeping, and every optional ability (bulk reads and writes, reads
// with expiry, Workers KV metadata). It is what the Workers KV emulator
// serves and what the dual-write tests run on.
package memory
