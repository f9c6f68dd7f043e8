// Package nodescript runs a script of workers/test/support under Node, as
// the tests and commands that drive Workers in miniflare do: lines go to
// its standard input, and its standard output is read a line at a time.
// Run does the same for any such program: the benchmarks' child processes,
// the test binary run again in a role of its own.
package nodescript
