// Package metricbatch holds measurements until a batch of them is full or
// the meter collects, for instrumentation that records them into the
// OpenTelemetry SDK.
//
// Recording one measurement walks the SDK's attribute maps and the
// aggregation's buckets: about 190 ns warm with SDK v1.47, and some
// microseconds in a process that sleeps between requests, whose caches are
// cold by the next one. A Batch of Size measurements is recorded at once,
// which pays for that memory once. Add records a batch when it fills; the
// instrumentation calls Flush from a callback registered with its meter,
// which the SDK runs as it collects and before it reads the instruments: a
// collection then holds every measurement made before it began.
//
// A measurement that an exemplar should link to a trace (its span is
// sampled) needs its context, which a batch does not keep: record it at once.
package metricbatch
