// Package kv is the key-value contract every kvshadow store keeps.
//
// A Store has four operations (Get, Put, Delete, List); GetJSON and PutJSON
// are helpers over any Store. The rules are Workers KV's, because Workers KV
// is the primary store of the migration and the composite store must never
// accept an input the primary would refuse:
//
//   - a key is 1..512 bytes of valid UTF-8 and is not "." or "..";
//   - a value is at most 25 MiB of arbitrary bytes (empty is allowed);
//   - an expiry is at least 60 s away (TTL or absolute time) and at most
//     MaxTTL away;
//   - a list page holds at most 1000 keys (0 asks for the default, 1000);
//   - a key's metadata, where a store keeps it, is one JSON value of at most
//     1024 bytes.
//
// Validate* functions apply those rules; every backend calls them before any
// I/O, so each backend refuses the same input with the same sentinel error.
//
// Get of a missing key returns ErrNotFound, distinct from an empty value.
// Put without an expiry clears any expiry the key had. Delete is idempotent.
// List returns keys in UTF-8 byte order with an opaque cursor; a page may be
// short or even empty before the end, so callers stop on Done, never on an
// empty page. A store that lists expiries and metadata with the keys, as
// Workers KV does, returns them in ListResult.Info.
//
// Namespace gives a module its own view of a Store, prefixing "<module>:" to
// every key and stripping it from listed keys, as the bot's createStore did.
//
// Optional abilities (bulk reads and writes, reads that return the expiry,
// Workers KV's per-key metadata: MetadataStore, whose GetValue and
// GetMetadata read the value or the metadata alone, each what one Workers KV
// request returns) are separate interfaces a caller discovers by type
// assertion, in the manner of database/sql/driver.
package kv
