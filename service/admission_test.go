package service

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestSlowBodyFloodLeavesOthersServed: one client holding the client token
// opens slow-body PUTs without end (a byte, then nothing); another client's
// requests and the tee's batches, from the flooding client's own address
// even, are still served.
func TestSlowBodyFloodLeavesOthersServed(t *testing.T) {
	r := start(t, "--stage", "dualwrite", "--max-concurrent", "8")
	u, _ := url.Parse(r.api)
	token := r.c.secrets.token
	send := func(from net.IP, raw string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: from}}
		c, err := d.Dial("tcp", u.Host)
		if err != nil {
			t.Skipf("cannot send from %s: %v", from, err)
		}
		t.Cleanup(func() { c.Close() })
		_, _ = io.WriteString(c, raw)
		return c
	}
	answer := func(c net.Conn) (int, string) {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	attacker, other := net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 2)
	const flood = 20
	refused := make(chan bool, flood)
	for i := range flood {
		c := send(attacker, fmt.Sprintf("PUT /client/v4/accounts/%s/storage/kv/namespaces/%s/values/slow%d HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: 100000\r\n\r\nv",
			DemoAccount, DemoNamespace, i, u.Host, token))
		go func() { code, _ := answer(c); refused <- code == http.StatusServiceUnavailable }()
	}
	// The flooding client gets its share (three quarters of 8) and 503 for
	// the rest, at once.
	timeout := time.After(30 * time.Second)
	for n := 0; n < flood-6; {
		select {
		case ok := <-refused:
			if ok {
				n++
			}
		case <-timeout:
			t.Fatalf("the flooding client got %d refusals, want %d: it holds more than its share", n, flood-6)
		}
	}
	get := fmt.Sprintf("GET /client/v4/accounts/%s/storage/kv/namespaces/%s/keys HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", DemoAccount, DemoNamespace, u.Host, token)
	if code, body := answer(send(other, get)); code != http.StatusOK {
		t.Errorf("another client during the flood: %d %s", code, body)
	}
	batch := fmt.Sprintf(`{"namespace":%q,"copies":[{"key":"wordle:tee","value":"dGVl","acked_at":%d}]}`, DemoNamespace, time.Now().UnixMilli())
	ingest := fmt.Sprintf("POST %singest HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", TeePath, u.Host, token, len(batch), batch)
	if code, body := answer(send(attacker, ingest)); code != http.StatusOK || !strings.Contains(body, `"copies":1`) {
		t.Errorf("the tee's batch during the flood: %d %s", code, body)
	}
}
