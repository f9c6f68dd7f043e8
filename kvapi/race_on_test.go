//go:build race

package kvapi_test

// raceEnabled: this binary runs under the race detector, whose shadow memory
// makes a process's resident set several times its heap.
const raceEnabled = true
