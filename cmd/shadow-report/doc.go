// Command shadow-report scans the Workers KV namespace and the MongoDB
// database of a migration, prints their parity per module (a terminal table,
// JSON, Markdown or a self-contained HTML page), gates a cutover on it with
// its exit code, and repairs or backfills what differs: toward the store the
// stage document (kvshadow-proxy's, in MongoDB) makes authoritative, unless
// told otherwise with --authoritative and --force-authoritative. A full run
// is recorded beside the stage document, so that kvshadow-proxy can clear
// an overflowed settle set with it.
//
// Run shadow-report --help for the flags, the environment and examples;
// shadow-report --demo tries it with no account. Exit codes: 0 parity at or
// above --min-parity, 1 below, 2 an error.
package main
