package mongotest_test

import (
	"context"
	"os"
	"strings"
	"testing"

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
