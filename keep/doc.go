// Package keep keeps what a late tee copy's conflict leaves out of the
// authoritative store, and carries out the operator's decision for it.
//
// A late copy (dualwrite's "Late copies") that the Store reports as a
// Conflict has two sides, the copy the binding wrote to Workers KV and what
// MongoDB held, and after it the authoritative store holds one of them: for
// a conflict or a failure MongoDB's, whose value verification then copies
// over the copy in Workers KV; for a copy applied while another instance
// may have written the key, the copy, over what MongoDB held. The record
// has both sides' digests and no value, so without this package the side
// that lost is gone once verification has run: the operator can see that a
// write was displaced, not restore it.
//
// A Store (MongoStore beside the control documents, MemoryStore) is a
// dualwrite.Keeper: it keeps the displaced side, value, expiry and
// metadata, under a reference that the record carries, with a fingerprint
// (SHA-256 of value and metadata, and the expiry) of the side that stood, for at most KeepFor and never past the
// displaced value's own expiry, and at most MaxKept sides and MaxKeptBytes
// of values (the oldest go first), so that a bot version that writes its
// binding long after the flip cannot fill the database; at most Rate a
// minute (a side counting once more per MiB), so that one client forging
// copies cannot push out the sides kept before; a MemoryStore's values are
// charged to the process's memory budget, of which they hold at most a
// quarter. A MongoStore keeps its totals in a document of their own, so
// that a Keep costs a bounded number of requests however many sides are
// kept. The Store calls it under the key's lock, before anything is
// overwritten.
//
// A Decider carries out a decision for a record of the conflict ledger
// (control.ConflictLedger): keep the side that stands, which writes nothing,
// or the kept one, which it writes through the namespace's dual-write store
// (to the authoritative store, copied to the other, as any write) only if
// the key still holds the side that stood when it was kept, so that no
// write made since is overwritten unless the decision says so (force). The
// check and the write are one conditional write (dualwrite.Store.WriteIf),
// under the key's lock, which every write of the key through the store
// takes: a write acknowledged while the decision runs came before the
// check (the decision refuses) or after the write, never between. Forced,
// it overwrites what it found, with the same check. The
// decision is then recorded, once (control.ErrDecided for a second), and the
// kept side discarded; of two decisions for one record at once, one that
// wrote and then finds the other recorded says so. A decision whose write was made but not recorded
// (the ledger could not be reached) is taken again without a second
// write: the key then holds the kept side already.
package keep
