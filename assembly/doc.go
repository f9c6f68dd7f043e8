// Package assembly builds what serves a Workers KV namespace, once, for
// kvshadow-proxy (package service) and a Go bot's store (package botkv):
// the cfkv primary and the mongokv shadow with the control board beside it
// (OpenBackends), and, over them (Start), one dual-write store per
// namespace with its breaker, telemetry (dualwriteotel, otelkv), settle
// journal and Fleet, the shadow's sweepers, and the Follower that keeps
// them on the stage document with a heartbeat, its Target a
// control.Stores.
//
// # One MongoDB client per process and URI
//
// Every Backends opened on one URI shares the process's two driver clients
// for it (mongokv's, which connects lazily and once for concurrent first
// callers, and the board's), as the driver recommends; each Close drops a
// reference and the last disconnects them: a program that keeps one store
// open pays for the connects once.
//
// # The start
//
// Start reads every store once and the stage document, all at once, within
// StartWait: a store that refuses the settings (a token, an account, a
// namespace, MongoDB's login) fails it with a *SettingsError naming every
// one; a store that does not answer is said in one line, and the start goes
// on. The stores start in the document's stage, or, when there is none yet,
// in Config.Store.Stage. When the document cannot be read, the instance runs
// the stage kept in its journal directory (control.LastStage) where Workers
// KV is authoritative in it (control.ServesDetached), and the Follower
// starts detached; otherwise it serves nothing (Gated), or, with
// RequireStage, Start fails with ErrMongoDBDown. Each case is said in one
// warning. Follow then starts the Follower from the document already read.
//
// # The end
//
// Drain closes the stores (their lanes drained until its ctx ends; what is
// left stays dirty, in the journal), Leave writes the last heartbeat, and
// Close releases the rest; when the board (in MongoDB) did not answer
// lately, the lanes and the heartbeat get 2 s each whatever the ctx, and
// the last disconnects 2 s.
package assembly
