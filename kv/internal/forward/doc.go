// Package forward builds the store a wrapper returns: one that has exactly the
// optional abilities (kv.ExpiryGetter, kv.MetadataStore, the bulk ones) of the
// store it wraps, so that a type assertion on the wrapper answers as it would
// on the wrapped store. otelkv and kvfault share it.
package forward
