// Package report holds the integration tests of shadow-report: the command
// (internal/report/cli.Run, what cmd/shadow-report runs) against the Workers
// KV REST API server through the real Workers KV client, and against an
// embedded FerretDB (or MONGODB_URI's server) through the real MongoDB
// driver, seeded with known divergences of every kind; and the gate run
// three times under the traffic of a dual-write store.
package report
