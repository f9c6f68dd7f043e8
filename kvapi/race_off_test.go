//go:build !race

package kvapi_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
