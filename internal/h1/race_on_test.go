//go:build race

package h1_test

// raceEnabled: this binary runs under the race detector, whose sync.Pool
// drops items at random, so that pooled copy buffers are allocated again
// and allocation counts say nothing about this package.
const raceEnabled = true
