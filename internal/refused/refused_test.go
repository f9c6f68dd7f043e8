package refused

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

// A refused Addr refuses connections, as a server that is down does,
// and no one else can bind it (a test binds it as another process would)
// until it is released; then a server can start there.
func TestAddrHoldsTheAddressOfAServerThatIsDown(t *testing.T) {
	addr, release, err := Addr()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("a connection to %s: %v, want it refused", addr, err)
	}
	for _, at := range []string{addr, "0.0.0.0" + addr[len("127.0.0.1"):]} {
		if thief, err := net.Listen("tcp", at); err == nil {
			thief.Close()
			t.Errorf("another process bound %s while it was held", at)
		}
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	server, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("a server on %s once released: %v", addr, err)
	}
	server.Close()
	if err := release(); err != nil {
		t.Errorf("a second release: %v", err)
	}
}
