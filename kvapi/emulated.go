package kvapi

import (
	"context"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
)

// Emulated is an emulated Workers KV account on loopback: a Server over a
// memory store for each namespace, reached over HTTP as Workers KV is, by
// the demos and the tests.
type Emulated struct {
	URL    string // the API root (".../client/v4/"), cfkv's BaseURL
	Server *Server
	Stores map[string]*memory.Store // each namespace's
	// Stop stops serving and waits for the requests under way until ctx
	// ends.
	Stop func(ctx context.Context) error
}

// Emulate serves c on a loopback port until Stop, each of namespaces a
// memory store on c.Clock (c.Namespaces is made here).
func Emulate(c Config, namespaces ...string) (*Emulated, error) {
	e := &Emulated{Stores: map[string]*memory.Store{}}
	c.Namespaces = map[string]kv.Store{}
	for _, ns := range namespaces {
		e.Stores[ns] = memory.New(memory.Config{Clock: c.Clock})
		c.Namespaces[ns] = e.Stores[ns]
	}
	var err error
	if e.Server, err = New(c); err != nil {
		return nil, err
	}
	url, stop, err := ServeLoopback(e.Server)
	if err != nil {
		return nil, err
	}
	e.URL, e.Stop = url+"/client/v4/", stop
	return e, nil
}
