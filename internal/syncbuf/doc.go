// Package syncbuf is a bytes.Buffer that many goroutines may write at once:
// what tests give a logger or an exporter whose output they then search.
package syncbuf
