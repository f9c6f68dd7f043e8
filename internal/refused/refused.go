// Package refused is test support, used by no production code: an address
// where a server is down, for the tests of both modules (the library's
// command tests, the tests module's proxy, bot and rehearsal). It lives in
// the library module as the one place both can import.
package refused

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
)

// Addr binds a loopback TCP port without listening on it and holds it
// until release: a connection there is refused, as at a server that is
// down, and no other process can bind the port meanwhile, as one could a
// port picked and closed (a test's down MongoDB would then be whatever
// another test serves there). release, idempotent, frees the port for a
// server the caller starts there itself.
func Addr() (addr string, release func() error, err error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return "", nil, err
	}
	syscall.CloseOnExec(fd)
	release = sync.OnceValue(func() error { return syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return "", nil, errors.Join(err, release())
	}
	sa, err := syscall.Getsockname(fd)
	if in, ok := sa.(*syscall.SockaddrInet4); ok && err == nil {
		return fmt.Sprintf("127.0.0.1:%d", in.Port), release, nil
	}
	return "", nil, errors.Join(fmt.Errorf("refused: the bound port unknown: %v", err), release())
}
