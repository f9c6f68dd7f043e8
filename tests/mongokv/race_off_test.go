//go:build !race

package mongokv_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
