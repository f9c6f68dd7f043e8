// Package cli is the shadow-report command: its flags and environment, the
// connections to Workers KV and MongoDB (or the in-process demo), the run of
// the report engine, the output, and the exit codes. cmd/shadow-report is a
// tiny main over Run; the integration tests call Run too, so that what they
// prove is what the command does.
//
// Exit codes: ExitOK (0) when parity is at least --min-parity,
// ExitBelowParity (1) when it is below, ExitError (2) for anything else
// (bad flags, unreachable stores, an interrupted scan).
package cli
