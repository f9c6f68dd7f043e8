// Package mongokv is the kv.Store over MongoDB, through the official driver
// (go.mongodb.org/mongo-driver/v2), keeping the JavaScript bot's document
// shape exactly so that the bot and kvshadow can share one database during the
// migration.
//
// # Documents
//
// A key lives in the collection of its module, the text before its first ":"
// when that text is a module name (^[a-z0-9_-]+$), with "-" turned into "_":
// "loldle-emoji:x" lives in "loldle_emoji". Every other key ("plain",
// "Wordle:x", "é:1") lives in DefaultCollection. Keys are stored and listed
// with their prefix:
//
//	{ _id: "wordle:games:42", value: "{\"word\":\"apple\"}", expiresAt: ISODate(...) }
//
// value is a BSON string when the bytes are valid UTF-8 (as the bot's readers
// expect) and BSON binary (subtype 0) otherwise; expiresAt is absent when the
// key has no expiry.
//
// A Store is a kv.MetadataStore: a key's Workers KV metadata, which the bot
// never writes, is one more field, metadata, holding the JSON text as a
// string (as value holds the bot's JSON), written by PutEntry and PutMany,
// returned by GetEntry, GetMetadata (without the value), GetMany and List
// (ListResult.Info), and removed by Put, so that a document without
// metadata keeps the seed's shape:
//
//	{ _id: "wordle:games:42", value: "...", metadata: "{\"author\":\"wrangler\"}" }
//
// The bot's own put (a $set of value) leaves a metadata field as it was,
// where a Workers KV write without metadata clears it: a key that a REST
// client annotated keeps its metadata until its next write through this
// package.
//
// # What the bot can read
//
// The bot's MongoKVStore (seed phase-02) reads value with findOne and returns
// it as it is. It reads every value that this package wrote, byte for byte,
// except:
//   - a value that is not valid UTF-8: the bot only ever writes strings, and
//     gets such a value as a BSON Binary object rather than a string;
//   - a value too large for one document: the bot gets a document without
//     value, so its get returns undefined.
//
// Every value that fits in one document is stored inline, as the bot would
// store it (the bot cannot store a larger one at all): a value of up to
// InlineLimit(Config.MaxDocumentSize, key, hasExpiry, metadata) bytes, which
// is the document limit less 27 bytes of framing, less the key's bytes, less
// 19 with an expiry, less 15 and the metadata's bytes with metadata. With MongoDB's 16 MiB (16,777,216 bytes) that is at
// least 16,775,619 bytes whatever the key (at most 512 bytes), expiry and
// metadata (see MetadataStore). Only a longer value (the contract allows
// 25 MiB) is split: its document carries, instead of value, a reference
//
//	{ _id: "<key>", chunks: { gen: "<id>", n: 2, size: 26214400 }, expiresAt?: ... }
//
// to n documents { _id: "<id>:00000", data: Binary, expiresAt?: ... } in
// ChunkCollection, and one { _id: "<id>", key: "<key>", n: 2 } in
// GenerationCollection. The generation and chunks are written first, with
// the key's own expiry (the generation an hour more), then the key's
// document is switched to them, and nothing after: a Put cut short at any
// point leaves the old document and its chunks whole, or the new one with
// all of its chunks, never a document pointing at chunks that expire before
// it. Overwrites and deletes through this package remove the chunks they
// replace. The bot knows nothing of chunks: when it deletes or overwrites a
// chunked key, Sweep finds the generation that its key's document no longer
// references, once it is an hour old (so a Put under way keeps its chunks)
// or its key has expired, whatever the key's TTL, and deletes it, and
// removes the stale chunks field that the bot's overwrite left beside the
// new value; until then, a value in the document always wins over a
// reference. The chunks of an interrupted Put are such a generation too.
// Run RunSweeper (kvshadow-proxy does) wherever the bot writes chunked keys
// or Puts can be cut short.
//
// # Expiry
//
// Every collection gets the TTL index {expiresAt: 1} (expireAfterSeconds 0,
// sparse, as the bot creates it) once per Client. MongoDB's TTL monitor runs
// only every 60 s, so every read also filters expiresAt against
// Config.Clock. A server that cannot build TTL indexes (FerretDB answers with
// code 238) is logged once; expired documents then stay until Store.Sweep or
// Store.RunSweeper deletes them, and reads never return them.
//
// # Connections
//
// A Client is one driver client, meant to be one per process and URI, shared
// by any number of Stores. It connects on first use: concurrent first callers
// share one connect, a failed connect is forgotten so the next call tries
// again, and a server that cannot be selected within the server-selection
// timeout is reported as kv.ErrUnavailable with a retry hint. A MongoDB that
// cannot be reached is logged once per outage and then every 5 minutes, not
// at each failed connect; a failed Client.Connect is its caller's to say
// (a process at start, with what it does about it). Errors and logs never
// carry the URI or its credentials.
//
// # Listing
//
// List reads index-friendly _id ranges ($gte the prefix, $lt the prefix's
// upper bound, $gt the cursor's key), sorted by _id, never with skip.
// MongoDB compares strings bytewise without a collation, which is the
// contract's UTF-8 byte order. A prefix that names a module reads one
// collection; a prefix without ":" can span several modules and merges their
// sorted ranges, reading only keys whose module matches the collection, so
// that another application's collection with a module-like name (the bot's
// trades) lends no keys. Cursors are kv.EncodeCursor of the last key.
//
// Each listed key comes with its expiry and metadata (kv.ListResult.Info,
// as Workers KV lists them), from the same find: its projection brings _id,
// expiresAt and metadata, never the value nor a chunk reference, which a
// listing of chunked values thus never reads either (a key's expiry and
// metadata are in its own document, chunked or not). A caller such as the
// REST front needs no second read for them. GetMetadata reads a key's
// document with the same projection.
//
// # Round trips
//
// Get, Delete, Put of a value that fits in its document, GetMetadata
// whatever the value's size, and a List page under a module prefix (with
// each key's expiry and metadata) cost one round trip each (a prefix
// without ":" also lists the collections, then reads each reachable one). Single-key reads and
// writes filter on the bare _id, an index point lookup on MongoDB and the
// only filter FerretDB pushes down to its storage instead of decoding every
// document. A Put
// carries a guard ($pop of the chunks field, a no-op on inline documents and
// a TypeMismatch on a chunk reference) so that it can never orphan chunks;
// a refused Put replaces the chunked value through findAndModify and deletes
// its chunks. Bulk writes go through the collection's BulkWrite (never the
// client-level bulkWrite, which FerretDB lacks), unordered, 1,000 keys a
// command: PutMany of 10,000 keys of one module is ten round trips. GetMany
// is one $in query per collection and 1,000 keys; a server that answers
// one in a reply past the driver's 48 MB (FerretDB, for three documents of
// 16 MiB; MongoDB sends replies of 16 MiB) has it asked again in halves.
package mongokv
