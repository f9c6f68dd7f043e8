package mongotest_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/tests/mongotest"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestEmbeddedServer(t *testing.T) {
	dir := t.TempDir()
	s, err := mongotest.Start(t.Context(), mongotest.Config{Dir: dir, IgnoreEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.External() || !strings.HasPrefix(s.URI(), "mongodb://127.0.0.1:") {
		t.Fatalf("URI = %q, external %v; want an embedded loopback server", s.URI(), s.External())
	}
	c, err := s.Client()
	if err != nil {
		t.Fatal(err)
	}
	name := mongotest.NewDatabaseName(t.Name())
	if _, err := c.Database(name).Collection("c").InsertOne(t.Context(), bson.D{{Key: "_id", Value: "k"}}); err != nil {
		t.Fatalf("insert: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// A given directory keeps its data: a restart finds the document.
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("data directory after Close: %d entries, %v", len(entries), err)
	}
	s2, err := mongotest.Start(t.Context(), mongotest.Config{Dir: dir, IgnoreEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	c2, err := s2.Client()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c2.Database(name).Collection("c").CountDocuments(t.Context(), bson.D{}); err != nil || n != 1 {
		t.Fatalf("after restart: %d documents, %v", n, err)
	}
}

func TestTemporaryDirectoryRemoved(t *testing.T) {
	s, err := mongotest.Start(context.Background(), mongotest.Config{IgnoreEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := s.Dir()
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("data directory %q while running: %v", dir, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("temporary directory left behind: %v", err)
	}
}

func TestEnvURI(t *testing.T) {
	const uri = "mongodb://db.invalid:27017/x"
	t.Setenv(mongotest.EnvURI, uri)
	s, err := mongotest.Start(t.Context(), mongotest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !s.External() || s.URI() != uri {
		t.Fatalf("with %s set: URI %q, external %v", mongotest.EnvURI, s.URI(), s.External())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestNewDatabaseName(t *testing.T) {
	seen := map[string]bool{}
	for _, label := range []string{"TestX/sub test", "TestX/sub test", strings.Repeat("Ü", 100), ""} {
		name := mongotest.NewDatabaseName(label)
		if seen[name] || len(name) > 38 || strings.ContainsAny(name, "/\\. \"$") {
			t.Errorf("NewDatabaseName(%q) = %q", label, name)
		}
		seen[name] = true
	}
	db := mongotest.New(t).Database(t)
	if !strings.HasPrefix(db, "t_testnewdatabasename_") {
		t.Errorf("Database(t) = %q", db)
	}
}

// A server started on a given address and stopped can be started again on
// the same one, with the same data: a client made before the stop (a
// bot's, across an outage) reads what it wrote before and writes again.
func TestRestartOnTheSameAddress(t *testing.T) {
	dir := t.TempDir()
	s, err := mongotest.Start(t.Context(), mongotest.Config{Dir: dir, IgnoreEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	addr, uri := s.Addr(), s.URI()
	if !strings.HasPrefix(addr, "127.0.0.1:") || !strings.Contains(uri, addr) {
		t.Fatalf("Addr %q, URI %q", addr, uri)
	}
	client, err := mongokv.NewClient(mongokv.ClientConfig{URI: uri, ServerSelectionTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close(context.Background())
	store, err := client.Store(mongokv.Config{Database: mongotest.NewDatabaseName(t.Name())})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(t.Context(), "wordle:games:1", []byte("before"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(t.Context(), "wordle:games:1"); !errors.Is(err, kv.ErrUnavailable) {
		t.Fatalf("Get while the server is down: %v; want kv.ErrUnavailable", err)
	}

	s2, err := mongotest.Start(t.Context(), mongotest.Config{Dir: dir, IgnoreEnv: true, Listen: addr})
	if err != nil {
		t.Fatalf("restart on %s: %v", addr, err)
	}
	defer s2.Close()
	if s2.URI() != uri || s2.Addr() != addr {
		t.Fatalf("restarted at %q (%q), want %q (%q)", s2.URI(), s2.Addr(), uri, addr)
	}
	var v []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if v, err = store.Get(t.Context(), "wordle:games:1"); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || string(v) != "before" {
		t.Fatalf("after the restart: %q, %v; want the value written before it", v, err)
	}
	if err := store.Put(t.Context(), "wordle:games:2", []byte("after"), kv.PutOptions{}); err != nil {
		t.Fatalf("write after the restart: %v", err)
	}

	// An address in use fails the start.
	if err := client.Close(t.Context()); err != nil { // before the server's Close, which waits for open connections
		t.Fatal(err)
	}
	if s3, err := mongotest.Start(t.Context(), mongotest.Config{Dir: t.TempDir(), IgnoreEnv: true, Listen: addr}); err == nil {
		s3.Close()
		t.Fatalf("a second server started on %s, which is in use", addr)
	}
}

// Parallel tests start embedded servers at the same moment (tests/botkv's
// detached tests do): under the race detector this fails if Start lets two
// of FerretDB's constructors run at once.
func TestServersStartedAtOnce(t *testing.T) {
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			s, err := mongotest.Start(t.Context(), mongotest.Config{IgnoreEnv: true})
			if err == nil {
				err = s.Close()
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
