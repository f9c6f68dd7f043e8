// Package kvfault wraps any kv.Store in a fake with fault knobs, in the manner
// of database/sql's fakedb: added latency with jitter, a random error rate, a
// whole outage, and stale reads that return the value a key had before its
// last write, as an eventually consistent store does. Every knob can be
// turned while the store is in use, from any goroutine.
//
// Randomness comes from a seeded generator, so a test that drives the store
// from one goroutine sees the same faults on every run. Latency waits on the
// clock the test chooses: a clock.Fake makes a slow store advance only when
// the test moves time, the real clock makes it really slow (for benchmarks).
//
// The *Store New returns has every optional ability but kv.MetadataStore
// (one the wrapped store lacks answers ErrUnsupported) and refuses entries
// with metadata; Store.Exact returns it with exactly the wrapped store's
// abilities, kv.MetadataStore among them, for code that decides by type
// assertion.
//
// It is a fake, not a mock: it holds no expectations and records only
// counts, so a test asserts on the behaviour of the code under test, not on
// the calls it made.
package kvfault
