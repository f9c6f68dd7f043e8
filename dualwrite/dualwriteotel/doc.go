// Package dualwriteotel records the dual-write store's asynchronous side
// with OpenTelemetry. Observer implements dualwrite.Observer: it counts
// comparisons and divergences by kind and namespace, dropped operations by
// reason, repairs by outcome, asynchronous operations and breaker
// transitions, and traces each asynchronous operation (a mirrored write, a
// comparison, a repair) as a span of its own that links to the caller's
// span, rather than a child that would outlive its parent (the caller has
// usually ended its span before the operation runs). Watch adds the gauges
// read from the store's Stats; NewStore assembles the whole instrumented
// composite.
//
// Like otelkv it uses only the OpenTelemetry API, with providers injected
// by options and the global ones by default, and it records no key and no
// value: comparisons and repairs carry only the key's namespace.
package dualwriteotel
