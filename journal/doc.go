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
// Two bounds, one for each way a process ends.
//
// The death of the process (SIGKILL, a panic, the OOM killer) loses no
// mark. The dual-write store marks a key before its write reaches the
// authoritative store, and the Journal, a dualwrite.Recorder, keeps each
// new mark at once in its mark log: a file beside the journal (its name
// with ".marks" added) mapped shared into memory, where a record is a
// copy of the key into pages the kernel holds for the file and writes
// back whatever becomes of the process. There is no system call and no
// fsync on the caller's path, and no allocation (a write(2) would cost a
// system call per new key, the whole budget of a Put; the figures are in
// docs/performance.md). Open replays the log into the file (Recovered says
// how many marks only the log held) and empties it. The log has two
// halves (DefaultLogSize, 8 MiB each): the store seals one just before it
// takes a group of changes, and the commit of that group drops it. A half
// full before its commit refuses records, which the store counts as
// journal errors; those marks wait for the commit as they did before.
//
// A crash of the machine (power, kernel) can lose the mark log, which is
// never synced; what survives is what bbolt committed. The store hands
// the changes to Commit in groups from its own goroutine, one bbolt
// transaction a group, as soon as the previous commit has ended. Only
// changes are written (a key entering the set, changing state, or leaving
// it); a key written again while unsettled costs nothing. So a machine
// crash loses at most the marks of the commit under way and those made
// since it began: at a rate R of keys entering the set and a commit time
// C, at most about R × 2C marks. With NoSync a commit is not synced either,
// and a machine crash can lose whatever the OS had not yet written.
// tests/settle measures both bounds on a real writer process killed with
// SIGKILL; docs/performance.md has the figures.
//
// # Scale
//
// Commit writes its keys in key order: sorted inserts fill a page before
// splitting it (fillPercent 0.9), where map order made bbolt split and
// rebalance pages all over the tree, superlinear in the group's size. The
// mapping is reserved at 1 GiB of address space (not memory), as etcd
// does, because bbolt copies every key a transaction touched onto the heap
// each time the mapping grows. What a commit, a load and a key on disk cost
// at 1,000 to 1,000,000 keys is in docs/performance.md.
//
// Compaction bounds the file: after a commit that leaves at least
// CompactFloor (1 MiB) and at least half of the file on bbolt's free list,
// the file is rewritten with only its live keys, as etcd's defrag does (a
// synced copy renamed over it). So the file never exceeds about twice the
// pages of the largest set it holds plus CompactFloor and one growth step,
// and a journal whose keys have all settled is back to 32 KiB.
//
// The file holds one bucket of keys, each with a one-byte mark, and one of
// settings: the format version and the flag that a full reconciliation is
// needed.
package journal
