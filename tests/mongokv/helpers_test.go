package mongokv_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// driverEvents counts what the driver's own monitors report: driver clients
// opened and closed (one topology each), and commands sent.
type driverEvents struct {
	opened, closed atomic.Int64
	mu             sync.Mutex
	commands       map[string]int
	// replied, when set before install, sees each command's reply, on
	// the caller's goroutine and only for the call's duration.
	replied func(command string, reply bson.Raw)
}

// install is a mongokv.ClientConfig.Options hook.
func (e *driverEvents) install(o *options.ClientOptions) {
	o.SetServerMonitor(&event.ServerMonitor{
		TopologyOpening: func(*event.TopologyOpeningEvent) { e.opened.Add(1) },
		TopologyClosed:  func(*event.TopologyClosedEvent) { e.closed.Add(1) },
	})
	m := &event.CommandMonitor{Started: func(_ context.Context, ev *event.CommandStartedEvent) {
		e.mu.Lock()
		if e.commands == nil {
			e.commands = make(map[string]int)
		}
		e.commands[ev.CommandName]++
		e.mu.Unlock()
	}}
	if e.replied != nil {
		m.Succeeded = func(_ context.Context, ev *event.CommandSucceededEvent) { e.replied(ev.CommandName, ev.Reply) }
	}
	o.SetMonitor(m)
}

// sent returns how many commands of the given names (all when none) were
// sent, and forgets them.
func (e *driverEvents) sent(names ...string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for name, c := range e.commands {
		if len(names) == 0 || contains(names, name) {
			n += c
			delete(e.commands, name)
		}
	}
	return n
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// gateDialer dials the real server unless the test closed its gate; it
// stands for a network that is down.
type gateDialer struct {
	closed atomic.Bool
	dials  atomic.Int64
	d      net.Dialer
}

func (g *gateDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	g.dials.Add(1)
	if g.closed.Load() {
		return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("network down (test gate closed)")}
	}
	return g.d.DialContext(ctx, network, addr)
}

// rawDB is the database of store s as the driver sees it, for reading the
// stored documents themselves.
func rawDB(tb testing.TB, database string) *mongo.Database {
	tb.Helper()
	c, err := srv.Client()
	if err != nil {
		tb.Fatalf("admin client: %v", err)
	}
	return c.Database(database)
}

// rawDoc reads one stored document, or nil when there is none.
func rawDoc(tb testing.TB, db *mongo.Database, coll, id string) bson.Raw {
	tb.Helper()
	raw, err := db.Collection(coll).FindOne(context.Background(), bson.D{{Key: "_id", Value: id}}).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil
	}
	if err != nil {
		tb.Fatalf("raw read %s/%q: %v", coll, id, err)
	}
	return raw
}

// rawCount counts the documents of a collection matching filter.
func rawCount(tb testing.TB, db *mongo.Database, coll string, filter bson.D) int64 {
	tb.Helper()
	if filter == nil {
		filter = bson.D{}
	}
	n, err := db.Collection(coll).CountDocuments(context.Background(), filter)
	if err != nil {
		tb.Fatalf("count %s: %v", coll, err)
	}
	return n
}
