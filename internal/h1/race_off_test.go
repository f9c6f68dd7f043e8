//go:build !race

package h1_test

const raceEnabled = false
