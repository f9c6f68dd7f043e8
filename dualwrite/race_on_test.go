//go:build race

package dualwrite

// raceEnabled: this binary runs under the race detector, which allocates
// on its own.
const raceEnabled = true
