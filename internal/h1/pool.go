package h1

import (
	"slices"
	"sync"
	"time"
)

// poolKey names the connections that may serve a request: scheme and the
// URL's host as written, so that looking one up makes no string.
type poolKey struct {
	tls  bool
	host string
}

// pool holds idle connections per host, oldest first. Connections are
// closed outside its lock: closing a TLS connection writes to it.
type pool struct {
	mu   sync.Mutex
	idle map[poolKey][]*conn
}

// take returns the newest idle connection for key, or nil. If the newest
// has been idle longer than timeout, so have all the others: they are
// closed.
func (p *pool) take(key poolKey, now time.Time, timeout time.Duration) *conn {
	p.mu.Lock()
	list := p.idle[key]
	if len(list) == 0 {
		p.mu.Unlock()
		return nil
	}
	c := list[len(list)-1]
	if now.Sub(c.idleSince) > timeout {
		stale := slices.Clone(list)
		clear(list)
		p.idle[key] = list[:0]
		p.mu.Unlock()
		closeAll(stale)
		return nil
	}
	list[len(list)-1] = nil
	p.idle[key] = list[:len(list)-1]
	p.mu.Unlock()
	return c
}

// put adds c to the idle connections of its host, closing those idle
// longer than timeout and, to keep at most max, the oldest.
func (p *pool) put(c *conn, now time.Time, max int, timeout time.Duration) {
	p.mu.Lock()
	list := p.idle[c.key]
	n := 0
	for n < len(list) && now.Sub(list[n].idleSince) > timeout {
		n++
	}
	if len(list)-n >= max {
		n++
	}
	var stale []*conn
	if n > 0 {
		stale = slices.Clone(list[:n])
		list = slices.Delete(list, 0, n)
	}
	c.idleSince = now
	if p.idle == nil {
		p.idle = make(map[poolKey][]*conn)
	}
	p.idle[c.key] = append(list, c)
	p.mu.Unlock()
	closeAll(stale)
}

// closeAll closes every idle connection.
func (p *pool) closeAll() {
	p.mu.Lock()
	idle := p.idle
	p.idle = make(map[poolKey][]*conn, len(idle))
	p.mu.Unlock()
	for _, list := range idle {
		closeAll(list)
	}
}

func closeAll(conns []*conn) {
	for _, c := range conns {
		c.close()
	}
}
