//go:build !race

package settle_test

const raceEnabled = false
