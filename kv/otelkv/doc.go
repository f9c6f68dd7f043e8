// Package otelkv instruments any kv.Store with OpenTelemetry: one client span
// per operation carrying the database semantic-convention attributes
// (db.system.name, db.operation.name, db.namespace) and kvshadow's own
// (kvshadow.role, kvshadow.stage, kvshadow.outcome, the key as the redaction
// policy allows), and two metrics per backend, role, operation and outcome:
// kvshadow.store.operations and kvshadow.store.operation.duration.
//
// What a call costs the metrics is small and stays warm: the operations
// are counted in atomic cells that the meter reads as it collects (an
// observable counter), and the duration of a call whose span is not
// sampled waits in a batch of 64 that is recorded at once (package
// internal/metricbatch), where the SDK's own recording walks attribute maps
// that are cold in a proxy that sleeps between requests. A collection first
// records what is batched, so both metrics hold every call that ended before
// it began. A call whose span is sampled is recorded as it ends, under its
// span, so that the histogram's exemplars link to its trace. New registers
// the collection callback with the meter for the life of the meter.
//
// It wraps rather than threads through: a backend knows nothing of
// telemetry, and the same wrapper serves Workers KV, MongoDB, the memory
// store and the dual-write composite. It uses only the OpenTelemetry API;
// providers are injected with WithTracerProvider and WithMeterProvider and
// default to the global ones, so a program that installs no SDK pays for
// no-op calls only.
//
// Values and metadata never reach a span or a metric. Keys appear as compare.Redactor
// renders them (a keyed HMAC by default). Errors appear as their class
// (compare.ErrorClass) in the span status and error.type, never as their
// text, because backend messages can quote keys.
//
// The store New returns implements exactly the optional abilities
// (kv.ExpiryGetter, kv.MetadataStore, kv.BulkGetter, kv.BulkPutter,
// kv.BulkDeleter) that the
// wrapped store implements, so callers that find them by type assertion
// behave the same with or without instrumentation. Instrument the raw store
// and apply kv.Namespace on top: a wrapped namespaced store is recorded with
// its module and full keys, but the wrapper does not forward its Module
// method.
package otelkv
