// Package membudget keeps a process's memory within a budget in bytes.
//
// A request's memory is bounded by the request's limits (a value of 25 MiB,
// a bulk write of 100 MiB); the process's is not, unless every request draws
// what it holds from one Budget: the bodies being read, the answers being
// encoded (a bulk get's base64 or escaped JSON, up to six times the bytes
// stored), the tee's batches, the copies waiting in the dual-write lanes. A
// request that cannot get its bytes waits briefly for others to give theirs
// back, then is refused (ErrExhausted: the front answers 503 with
// Retry-After), so that too much work at once costs a retry, never an
// out-of-memory kill.
//
// The budget is the whole process's: Limit is what it may hold, and grants
// may hold Limit less a reserve (a quarter, at least 32 MiB) for what no grant
// counts: the runtime, the stores' own data, the garbage between two
// collections. SetProcessLimit hands Limit to the Go runtime as its soft
// memory limit, so that the collector runs harder near it rather than let
// garbage take the process past it.
//
// A nil *Budget grants everything: code that takes one works without it.
package membudget
