// Package report is the engine of shadow-report: a full scan of the primary
// (Workers KV) and shadow (MongoDB) stores that classifies every key with
// package compare, per module and in total, renders the result, and can
// repair what differs.
//
// # The scan
//
// Both stores list their keys in UTF-8 byte order, so the scan is a
// merge-join of the two listings: memory holds one page of keys per side,
// Concurrency batches in flight and at most twice as many waiting to be
// committed, whatever the number of keys. Each batch's values are read with
// the store's bulk read (kv.BulkGetter; one Workers KV bulk-get request per
// 100 keys), else key by key (kv.ExpiryGetter, else Get: then expiries are
// not compared). A side is asked only for the keys it listed.
//
// Every request waits for its side's budget, a sliding window (by default
// 1,200 requests per 5 minutes on the primary, Workers KV's account limit),
// and an unavailable store (kv.ErrUnavailable) pauses its whole side for the
// delay it asked for before the request is retried. A listing that still
// fails ends the run; a read that still fails makes its keys primary_error
// or shadow_error.
//
// Parity is the percentage of compared keys that agree: match, or
// expired_on_one_side (a clock race, not data). Errors count against it.
//
// # Reading again what differs
//
// A scan reads each key once, and under traffic a key can differ for a
// moment because a copy of its last write is still on its way. With
// Config.Settle, every key the scan found divergent (up to DefaultMaxSettle)
// is read again from both stores once Settle has passed since its first
// read, in bulk: one that agrees then counts as agreeing (its copy
// landed); one showing the same difference on both sides counts as
// divergent (a write around the layer holds); one that changed is
// "pending", left for later: named in Report.LeftForLater with the reason,
// and left out of the gated parity, for a later run to judge. So runs under
// steady traffic agree, and a real divergence fails every one. A run with
// nothing divergent waits for nothing; a repair that is applied reads its
// own writes back instead.
//
// # Key lists
//
// With Scope.Keys the run reads exactly those keys from both stores in
// bulk, without listing either: the keys a dual-write store left dirty, for
// a check and repair that costs one bulk read per 100 keys on each side
// instead of a full scan. Per-side counts are then the listed keys each
// store holds; a key on neither side matches. The report says it was a key
// list.
//
// # Checkpoints
//
// With Config.Checkpoint, batches commit in key order and the run saves
// its position (the last committed key and the cursor of the page that held
// it, per side) and its counts, atomically, at most every CheckpointEvery
// and whenever it stops early. A run with the same options resumes there,
// says so on Notices, and returns the report an uninterrupted run would
// have. A completed run removes the file. A run with other stores or
// options refuses the file (ErrCheckpoint).
//
// # Repair
//
// With Repair.Enabled every divergent key is copied from the authoritative
// side over the other (its value and absolute expiry, in bulk), or deleted
// there when the authoritative side lacks it; without Repair.Apply nothing
// is written and the report counts what would be. Applied writes are read
// back from both sides and classified again. Over an empty shadow this is
// the initial backfill. A repair interrupted mid-batch may leave that batch
// written but not committed; the resumed run then finds those keys
// matching, so its "found" counts can be lower than an uninterrupted run's
// while the stores end the same.
//
// Config.Truth says why the authoritative side is the one it is (the
// stage document's choice, a caller's forced one, ...); every format prints
// it, with the store's name. The command (package cli) reads the stage
// document of package control to make that choice: the primary up to
// handover, the shadow from live on.
//
// # The JSON schema (version 1)
//
// The JSON renderer writes a Report: "schema" is "kvshadow.shadow-report"
// and "schema_version" 1. Fields are only added within a version.
//
//	run_id                    the run's ID where the command records it; absent otherwise
//	started_at, finished_at   RFC 3339 times of the run (the first, when resumed)
//	resumed                   the run continued from a checkpoint
//	primary, shadow           {name, budget ("1200/5m0s" or "unlimited"),
//	                           requests {list, get, put, delete, retries, total},
//	                           expiries (reads carry expiries)}
//	scope                     {modules, prefixes, exclude_modules, exclude_prefixes, sample_rate,
//	                           key_list (the number of keys of a key-list run; absent otherwise)}
//	options                   {ttl_tolerance_seconds, key_policy (hmac|plain|hidden),
//	                           expiries_compared, min_parity, stable_hashes (keys hashed
//	                           with a configured secret: the same in every run)}
//	truth                     {side (primary|shadow), store (its name), source (stage,
//	                           forced, flag or default), stage, generation (the stage
//	                           document's, when read), reason (a sentence)}
//	totals                    counts over all modules (below)
//	modules[]                 {module ("" outside any module, "*" past the cap), counts}
//	divergences[]             compare.Record: {namespace, key (per key_policy), kind,
//	                           primary, shadow: {present, length, hash, expiration},
//	                           error (its class only), at}; never values
//	divergences_omitted       divergent keys beyond MaxRecords
//	binary_in_shadow[]        compare.Record of each key whose shadow value is not
//	                          valid UTF-8 (any kind), up to MaxRecords; absent when none
//	binary_omitted            such keys beyond MaxRecords
//	too_large_for_bot[]       compare.Record of each key whose shadow value is longer
//	                          than one MongoDB document holds (any kind), up to
//	                          MaxRecords; absent when none
//	too_large_omitted         such keys beyond MaxRecords
//	repair                    present with --repair: {applied, authoritative, puts,
//	                           deletes, expiring, failed, rechecked, verified, pending,
//	                           remaining, after (kinds), parity_after}
//	settle                    present with Config.Settle (the command's --settle): {seconds,
//	                           rechecked, settled (agree now), held (the same difference:
//	                           divergent), left (changed: pending, out of the gated parity),
//	                           omitted (past 10,000, not read again), errors}
//	left_for_later[]          {namespace, key (per key_policy), kind (at the scan), reason}
//	                          of each key left, up to MaxRecords; absent when none
//	parity                    the gated parity: the scan's (without the keys left for
//	                           later), or parity_after when applied
//	passed                    parity >= min_parity
//
// counts are {primary_keys, shadow_keys (listed in scope), compared (the
// sampled union), kinds (every compare.Kind, zero included), divergent,
// binary_in_shadow, too_large_for_bot, parity}.
//
// The kinds (the keys of "kinds", and each record's "kind"), what each
// means and what to do about it are compare.Explain's, which every format
// prints beside the kinds it found, and docs/runbook.md's table.
//
// # Values that are not text
//
// The Go backend stores a value that is not valid UTF-8 as BSON Binary,
// which the JavaScript bot reads as an object, not a string. Such a key can
// match by its bytes and still break the bot, so every report calls it out
// (binary_in_shadow, a section of every format, and the verdict line) while
// parity keeps counting it by its bytes, as the Go layer reads it.
//
// A value longer than one MongoDB document holds beside its key (16 MiB
// less a little: mongokv.InlineLimit) is kept by mongokv in chunks, and the
// bot, which reads the document's value field, reads such a key as
// missing. Every report calls these out too, as their own kind
// (too_large_for_bot, a section of every format, and the verdict line),
// and parity counts them by their bytes.
package report
