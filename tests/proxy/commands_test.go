package proxy_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/otelkv"
	"github.com/kvshadow/kvshadow/service"
)

// commandLog records the commands a driver client sends to one database, as
// "command collection" ("find wordle"), from the driver's command monitor.
type commandLog struct {
	db string
	seenLog
}

// install is a mongokv.ClientConfig.Options hook.
func (l *commandLog) install(o *options.ClientOptions) {
	o.SetMonitor(&event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if e.DatabaseName != l.db {
			return // the handshake's and the driver's own, on admin
		}
		if coll, ok := e.Command.Index(0).Value().StringValueOK(); ok {
			l.add(e.CommandName + " " + coll)
			return
		}
		l.add(e.CommandName) // a command of the database, not a collection's
	}})
}

// TestEveryRouteCostsMongoDBOneCommandOfItsKind: in stage live, where
// MongoDB is authoritative, a client's call through the proxy reaches it as
// the one command its kind needs and no more, with what the route returns
// (the Expiration header, a listing's expiries and metadata) read in that
// command:
//   - a value GET, a metadata GET, a bulk get and a listing of one module
//     are one find each (a listing brings each key's expiry and metadata
//     with it, never a GetMany after it; a metadata GET brings no value);
//   - a PUT and a bulk write are one update (an upsert; the collection's
//     TTL index is asked for once per process, before the count);
//   - a DELETE is one findAndModify (it returns the document, so that a
//     chunked value's chunks can be deleted);
//   - a bulk delete of keys that hold their values inline is one delete;
//   - a listing without a module prefix is one listCollections and one
//     find per collection that can hold its keys (FerretDB has no
//     $unionWith to read them in one).
//
// Values too large for one document (chunked: their chunks cost reads and
// writes of their own) and bulk deletes of missing keys (one more find, for
// chunked keys among them) are not part of this count. The other store,
// Workers KV's side, is in memory, and comparison and verification are off
// or an hour away, so that what MongoDB sees is the caller's path alone;
// each count waits until the copies to the other store are written, so
// that it would also hold any command they cost.
func TestEveryRouteCostsMongoDBOneCommandOfItsKind(t *testing.T) {
	cmds := &commandLog{db: srv.Database(t)}
	client, err := mongokv.NewClient(mongokv.ClientConfig{URI: srv.URI(), Options: cmds.install, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close(context.Background()) })
	store, err := client.Store(mongokv.Config{Database: cmds.db})
	if err != nil {
		t.Fatal(err)
	}
	other := memory.New(memory.Config{})
	open := func(context.Context, *service.Config, service.Plumbing) (*service.Backends, error) {
		return &service.Backends{Board: control.NewMemoryBoard(),
			Sides: []service.Sides{{ID: namespace, Primary: other, PrimarySystem: otelkv.SystemMemory, Shadow: store}}}, nil
	}
	env := map[string]string{"CLOUDFLARE_ACCOUNT_ID": account, "CLOUDFLARE_KV_NAMESPACE_ID": namespace, "CLOUDFLARE_API_TOKEN": primaryToken,
		"MONGODB_URI": "mongodb://127.0.0.1:1/unused", "KVSHADOW_TOKEN": clientToken, "KVSHADOW_ADMIN_TOKEN": adminToken}
	in := startInProcess(t, env, []string{"--stage", "live", "--new-pairing", "--compare-rate", "0", "--consistency-window", "1h",
		"--probe-interval", "1h", "--sweep-interval", "1h", "--repair-interval", "1h"}, service.WithBackends(open))

	exp := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	for _, e := range []kv.Entry{
		{Key: "wordle:a", Value: []byte{0xff, 'x'}, Expiration: exp, Metadata: []byte(`{"m":1}`)},
		{Key: "wordle:t", Value: []byte("text"), Metadata: []byte(`{"m":2}`)},
	} {
		// Through the proxy's own client: its TTL index on "wordle" is
		// asked for here, once.
		if err := store.PutEntry(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	// settled returns the commands sent since the last call, once every
	// copy to the other store is written.
	settled := func() []string {
		t.Helper()
		eventually(t, "the copies to the other store", func() bool { return in.stats(t).Total.Queued == 0 })
		return cmds.take()
	}
	settled()

	resp := in.send(t, "GET", "values/wordle:a", "", "")
	if got := settled(); !slices.Equal(got, []string{"find wordle"}) {
		t.Fatalf("a value GET through the proxy reached MongoDB as %q, want one find", got)
	}
	if h := resp.Header.Get("Expiration"); h != strconv.FormatInt(exp.Unix(), 10) {
		t.Errorf("Expiration = %q, want %d", h, exp.Unix())
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "\xffx" {
		t.Errorf("value = %q, want the bytes as stored", b)
	}

	resp = in.send(t, "GET", "metadata/wordle:a", "", "")
	if got := settled(); !slices.Equal(got, []string{"find wordle"}) {
		t.Errorf("a metadata GET through the proxy reached MongoDB as %q, want one find", got)
	}
	var md struct{ Result json.RawMessage }
	if err := json.NewDecoder(resp.Body).Decode(&md); err != nil || string(md.Result) != `{"m":1}` {
		t.Errorf("metadata = %s, %v; want {\"m\":1}", md.Result, err)
	}

	resp = in.send(t, "GET", "keys?prefix=wordle:", "", "")
	if got := settled(); !slices.Equal(got, []string{"find wordle"}) {
		t.Errorf("a listing through the proxy reached MongoDB as %q, want one find", got)
	}
	var list struct {
		Result []struct {
			Name       string
			Expiration int64
			Metadata   json.RawMessage
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if r := list.Result; len(r) != 2 || r[0].Name != "wordle:a" || r[0].Expiration != exp.Unix() || string(r[0].Metadata) != `{"m":1}` ||
		r[1].Name != "wordle:t" || r[1].Expiration != 0 || string(r[1].Metadata) != `{"m":2}` {
		t.Errorf("listing = %+v, want wordle:a expiring at %d with {\"m\":1}, then wordle:t with {\"m\":2}", r, exp.Unix())
	}

	for _, c := range []struct {
		method, path, ctype, body string
		want                      string
	}{
		{"PUT", "values/wordle:b", "application/octet-stream", "B", "update wordle"},
		{"PUT", "bulk", "application/json", `[{"key":"wordle:c","value":"C"},{"key":"wordle:d","value":"D"}]`, "update wordle"},
		{"POST", "bulk/get", "application/json", `{"keys":["wordle:t","wordle:b"]}`, "find wordle"},
		{"POST", "bulk/delete", "application/json", `["wordle:c","wordle:d"]`, "delete wordle"},
		{"DELETE", "values/wordle:b", "", "", "findAndModify wordle"},
	} {
		in.send(t, c.method, c.path, c.ctype, c.body)
		if got := settled(); !slices.Equal(got, []string{c.want}) {
			t.Errorf("%s %s through the proxy reached MongoDB as %q, want one %s", c.method, c.path, got, c.want)
		}
	}
	// A listing whose prefix names no module cannot know which of the
	// collections (one a module) hold its keys: it lists them, then reads
	// each that can, here the one.
	in.send(t, "GET", "keys", "", "")
	if got := settled(); !slices.Equal(got, []string{"listCollections", "find wordle"}) {
		t.Errorf("a listing of every key through the proxy reached MongoDB as %q, want listCollections and one find", got)
	}
}
