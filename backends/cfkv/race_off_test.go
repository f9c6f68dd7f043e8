//go:build !race

package cfkv

// raceEnabled: see race_on_test.go.
const raceEnabled = false
