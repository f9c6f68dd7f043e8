// Package proxy tests kvshadow-proxy through the real clients: cloudflare-go
// v6 (through cfkv) against the service, whose primary is the Workers KV REST
// emulator reached over HTTP and whose shadow and control board are the
// embedded MongoDB-compatible server (or MONGODB_URI's). Some tests run the
// service in-process (service.Run), the others run the built command as
// separate processes, as instances behind a load balancer would be. The
// latency benchmarks run the emulator, the proxy and the floor they are
// measured against each in a process of its own (children_test.go).
package proxy
