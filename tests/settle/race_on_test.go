//go:build race

package settle_test

// raceEnabled: this binary runs under the race detector, which slows a
// writer process five times; writers are then a build of their own.
const raceEnabled = true
