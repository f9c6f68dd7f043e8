// Package journal is the durable settle set of the dual-write store: a
// dualwrite.Journal kept in one bbolt file on local disk, so that the keys
// written through a dualwrite.Store and not yet settled (dirty: the copy is
// known lost; unsettled: the copy was sent and not yet verified) survive a
// crash, a SIGKILL or a restart, and are verified and repaired by the next
// dualwrite.New on the same file.
//
// # Why bbolt
//
// go.etcd.io/bbolt is pure Go (no cgo, nothing to install), keeps one file,
// and commits each transaction atomically and durably: a commit writes its
// pages, syncs them, then writes and syncs the meta page, so after a crash
// or a power loss the file holds either the whole group or none of it, and
// is never torn. It is a B+tree updated in place with a free list; it
// reuses freed pages but never returns them, so the journal compacts
// itself (see Scale). It is maintained by the etcd project, which runs it
// in production as etcd's own storage, and it takes a file lock, so two
// processes cannot share one journal by mistake. An embedded SQL or LSM store would bring a
// larger dependency for a set of keys with a one-byte state.
//
// # Durability and cost
//
// The dual-write store records marks in memory before the caller's write
// returns and hands them to Commit in groups from its own goroutine, one
// bbolt transaction a group, as soon as the previous commit has ended: the
// caller never waits on the disk. Only changes are written (a key entering
// the set, changing state, or leaving it); a key written again while
// unsettled costs nothing here. A SIGKILL loses at most the changes of the
// commit under way and those made since it began: at a rate R of keys
// entering the set and a commit time C, at most about R × 2C marks. With
// NoSync, C is the time to hand the pages to the operating system, which a
// SIGKILL does not lose; only a power loss or a kernel crash can lose what
// the OS has not yet written. Measured here (BenchmarkCommit, 2 shared
// cores): a commit of 1 to 100 marks takes 2 to 4 ms with fsync and 0.06 to
// 0.5 ms without, so at 1,000 new keys a second a SIGKILL loses at most
// about 8 marks with fsync, 1 without. A key written again while already
// journaled loses nothing: tests/settle kills a writer at 1,200 writes a
// second over 300 hot keys and finds 0 marks lost.
//
// # Scale
//
// Commit writes its keys in key order: sorted inserts fill a page before
// splitting it (fillPercent 0.9), where map order made bbolt split and
// rebalance pages all over the tree, superlinear in the group's size. The
// mapping is reserved at 1 GiB of address space (not memory), as etcd
// does, because bbolt copies every key a transaction touched onto the heap
// each time the mapping grows. BenchmarkSettleSet (2 shared cores, fsync
// on, keys of 21 bytes): one commit of the whole set takes about 4 ms,
// 24 ms, 0.4 to 1.3 s and 7 to 13 s at 1,000, 10,000, 100,000 and
// 1,000,000 keys (in map order: 64 to 106 ms at 10,000, 3 to 4 times
// slower); loading it on a restart 0.5 to 3.8 µs a key; the file takes
// about 107 bytes a key (43 in pages, the rest the growth step of
// growthPerKey a key that a large commit reserves at once).
//
// Compaction bounds the file: after a commit that leaves at least
// CompactFloor (1 MiB) and at least half of the file on bbolt's free list,
// the file is rewritten with only its live keys, as etcd's defrag does (a
// synced copy renamed over it). So the file never exceeds about twice the
// pages of the largest set it holds plus CompactFloor and one growth step,
// and a journal whose keys have all settled is back to 32 KiB (measured:
// 10.7 MB at 100,000 keys, 107 MB at 1,000,000, 32 KiB once settled;
// under 1.1 MB files are left as they are).
//
// The file holds one bucket of keys, each with a one-byte mark, and one of
// settings: the format version and the flag that a full reconciliation is
// needed.
package journal
