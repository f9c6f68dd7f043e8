//go:build race

package cfkv

// raceEnabled: this binary runs under the race detector, whose sync.Pool
// drops what is put back at random, so pooled buffers are allocated anew.
const raceEnabled = true
