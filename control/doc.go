// Package control keeps several kvshadow-proxy instances on one migration
// stage. The stage lives in one control Document on a shared Board (the
// shadow database, in production), numbered by a generation that grows by
// one at each change; each instance keeps a Heartbeat there.
//
// A Follower is one instance's side. It polls the Board every PollInterval
// and applies a newer generation to its Target (the instance's dual-write
// stores), so that every instance runs a change within one poll interval
// plus the time its stores take to drain. It writes its Heartbeat every
// HeartbeatInterval: the generation it runs, whether its lanes drained (each
// copy queued before the heartbeat reached the other store), and its dirty
// and unsettled keys.
//
// # Changing the stage
//
// Follower.SetStage is the one way to change the Document. It applies the
// dual-write store's stage machine (dualwrite.CheckTransition: one step
// along the stages, never out of complete), and it refuses the flip of the
// authoritative store (handover to live, or back) unless every instance
// that counts reports itself drained, clean and past its handover fence:
//
//   - a live instance (its heartbeat younger than LiveFor) must report
//     drained lanes, no dirty key and no pending reconciliation, and run
//     the current generation; its unsettled keys (copies sent, not yet
//     verified) it verifies itself after the consistency window;
//   - any instance whose heartbeat says its fence holds: it entered
//     handover less than its fence interval ago (QuietUntil), or keys a
//     binding copy wrote last are not verified yet (IngestUnverified);
//     Follower.FlipHold says which, and for how long, for GET /stage;
//   - an instance that stopped blocks a flip if its last report had dirty
//     or unsettled keys: its journal still holds keys to settle, and
//     nobody settles them until it comes back. Restart it on its journal,
//     or reconcile those keys and Forget it;
//   - an instance whose heartbeat went stale without its leaving (a crash,
//     or a process cut off from the Board, which is in MongoDB, and so
//     from MongoDB itself, that keeps serving its last stage and writes
//     Workers KV alone) blocks a flip whatever it last reported: what it
//     wrote since is in no heartbeat. Mend its way to MongoDB or restart it;
//     if it is gone for good, reconcile its keys and Forget it. A cut that
//     begins less than LiveFor before a flip is not seen: the flip then
//     rests on that heartbeat, younger than LiveFor, as for any instance.
//
// The calling instance checks itself afresh rather than by its heartbeat.
// The change is a compare-and-swap on the generation (ErrConflict when
// another change won, naming it), after which the caller applies it at
// once and the others within a poll. On MongoBoard the swap is the insert
// of a claim whose _id names the generation, which the server takes once
// on every MongoDB-compatible server (an update filtered on the generation
// may match twice where it is not atomic, as on FerretDB); the stage
// document follows the claims, and Load carries it forward along them.
//
// A heartbeat is up to HeartbeatInterval old, so an instance may have
// written since it reported clean. Its own store then refuses the flip
// (dualwrite.ErrUnsynced), and the instance keeps its previous stage,
// reports the generation it lags behind (Status.Lag) and retries at every
// poll, after its repairs. The service reports itself not ready meanwhile,
// so that a load balancer stops sending it traffic until it runs the
// Document's stage.
//
// # Peers and the ledger
//
// After every heartbeat the Follower tells a PeerAware Target until when
// another instance may have written (from the others' heartbeats;
// dualwrite.Store.SetPeersUntil, which warns when the store has no Fleet).
// With a Fleet (Config.Fleet) it also takes, from the same read, the
// others' watermarks (Heartbeat.Watermarks: the oldest write each still has
// on its way, per namespace), so that no store of this instance confirms a
// divergence another's copy explains, and one difference is reported once
// (a Claimer board keeps the claims; see dualwrite's Confirmation, which
// says why a live instance is never taken for dead). Beside the Board, a
// Ledger keeps the report runs and the settle sets' overflows: MongoBoard
// and MemoryLedger are ones.
//
// # The pairing
//
// The Document records the Pairing it governs: the Workers KV account, and
// each namespace with its MongoDB database. Every entry point reads the
// Document through Read before it builds its stores (kvshadow-proxy and
// botkv in package assembly, shadow-report), and a Follower checks it
// again as it joins. A
// Document that governs another pairing is refused (ErrConfig, naming
// both), and so are a first start past shadow on a Board with no Document,
// and a start in live, rampdown or complete where a namespace's shadow
// holds no key while its primary does (Config.Stores, one list of each):
// one wrong setting, a mistyped database or a new namespace, would
// otherwise make an empty store the truth. Config.NewPairing waives the
// first two (an operator's "I mean it") and records the instance's pairing; a
// Document written before pairings were recorded gets the first joining
// instance's, one generation on, said in one info line. An instance
// serving a part of the pairing passes.
//
// # Starting without the Board
//
// An instance keeps the stage it runs in StageFile of its journal
// directory (KeepStage, from its Target's Apply). When it cannot read the
// Document at start, it may run LastStage only where ServesDetached says
// so (Workers KV authoritative), and starts its Follower with
// StartDetached, which joins once the Board answers; the Target then
// walks to the Document's stage one step at a time (Stores.Apply). A Board with
// no Document yet gets the stage the instance has been serving, as
// generation 1, rather than Config.Initial. The caller says, once, why it
// starts detached; the Follower logs no Board failure while detached
// (Status.BoardErr keeps it) and one info line when it joins.
// Package assembly decides so for kvshadow-proxy and botkv alike.
//
// What the Board does not give, the package does not claim: two instances
// may run different stages for up to one poll interval, during which both
// stores are written by every instance whatever the stage (a flip is only
// allowed between stages that write both), so no write is lost; only the
// order of two instances' writes to one key may differ between the stores,
// which is what durable settling verifies and repairs.
package control
