//go:build !race

package dualwrite

// raceEnabled: see race_on_test.go.
const raceEnabled = false
