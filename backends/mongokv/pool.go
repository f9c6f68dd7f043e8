package mongokv

import (
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Pool counts the connections of the driver clients it monitors, from the
// driver's pool events: what a server with a connection cap (MongoDB Atlas
// M0: 500) counts against it. One Pool may watch several clients (the
// shadow's and the control board's); the zero value is ready to use, and it
// is safe for concurrent use.
type Pool struct {
	open, inUse atomic.Int64
}

// PoolStats is a Pool's count now.
type PoolStats struct {
	// Open is the connections established and not yet closed; InUse those
	// of them checked out by an operation.
	Open, InUse int64
}

// Stats returns the counts now.
func (p *Pool) Stats() PoolStats { return PoolStats{Open: p.open.Load(), InUse: p.inUse.Load()} }

// Monitor is the driver's pool monitor that feeds p.
func (p *Pool) Monitor() *event.PoolMonitor {
	return &event.PoolMonitor{Event: func(e *event.PoolEvent) {
		switch e.Type {
		case event.ConnectionCreated:
			p.open.Add(1)
		case event.ConnectionClosed:
			p.open.Add(-1)
		case event.ConnectionCheckedOut:
			p.inUse.Add(1)
		case event.ConnectionCheckedIn:
			p.inUse.Add(-1)
		}
	}}
}

// Watch is a ClientConfig.Options that has p monitor the client's pool,
// after then (nil: nothing else).
func (p *Pool) Watch(then func(*options.ClientOptions)) func(*options.ClientOptions) {
	return func(o *options.ClientOptions) {
		o.SetPoolMonitor(p.Monitor())
		if then != nil {
			then(o)
		}
	}
}
