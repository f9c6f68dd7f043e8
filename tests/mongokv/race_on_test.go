//go:build race

package mongokv_test

// raceEnabled: this binary runs under the race detector, which slows the
// embedded FerretDB to about a second a MiB written or read.
const raceEnabled = true
