// Package service is kvshadow-proxy: the Workers KV REST API (package kvapi)
// served over one dual-write store per namespace, with an admin API
// (package admin) on a listener of its own, the stage followed from a
// control document shared by every instance (package control), and an
// orderly shutdown.
//
// Main reads the flags and the environment (Parse; secrets only from the
// environment or files) and calls Run, which builds the stores through
// package assembly (as botkv does) and serves the front, the admin API and
// the readiness probe over them.
//
// # Guarantees
//
// A client gets the authoritative store's answer, as through the library.
// The service refuses to start without a clients' token and an admin token,
// unless told in so many words that it serves without authentication on
// loopback (--unauthenticated-loopback). It starts in the control
// document's stage and serves no other: a change reaches it within the poll
// interval, and it reports itself not ready while it cannot apply one.
//
// Every key written is in the dual-write store's settle set until it is
// verified in both stores; with --journal-dir that set is a bbolt file per
// namespace, so that a restart on it settles what a crash or a stop left.
// The front also serves tee mode's ingest and stage endpoints (package
// ingest) under TeePath, with the clients' token.
//
// On SIGTERM it reports itself draining (readyz 503), stops accepting, lets
// requests under way finish within the grace period, drains the copy lanes
// within the drain timeout, keeps what is left in the journal (and the
// dirty keys where shadow-report reads them, with --dirty-dir), leaves the
// control board (removing its heartbeat when settled, marking it stopped
// with its counts when not, so that no flip happens until those keys are
// settled) and exits 0.
//
// --demo runs the same assembly with an emulated Workers KV account on
// loopback as the primary and in-memory shadow and board.
package service
