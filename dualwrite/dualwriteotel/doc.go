// Package dualwriteotel records the dual-write store's asynchronous side
// with OpenTelemetry. Observer implements dualwrite.Observer: it counts
// comparisons and divergences by kind and namespace, dropped operations by
// reason, repairs by outcome, asynchronous operations and breaker
// transitions, and traces each asynchronous operation (a mirrored write, a
// comparison, a repair) as a span of its own that links to the caller's
// span, rather than a child that would outlive its parent. Watch adds the
// gauges read from the store's Stats: the stage, the breaker states, lane
// and queue depth and coalesced copies, dirty keys and their overflow,
// suspects, their overflow and the suspicions cleared or superseded, and
// the settle journal's state, commits and pending marks.
//
// NewStore assembles the whole instrumented composite: the primary and the
// shadow wrapped by otelkv with their roles, the Observer, and the
// composite itself wrapped for the caller's spans, all sharing one
// Redactor.
//
// Like otelkv it uses only the OpenTelemetry API, with providers injected
// by options and the global ones by default, and it records no key and no
// value: comparisons and repairs carry only the key's namespace.
package dualwriteotel
