package service

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/internal/syncbuf"
)

// An Atlas URI ending in /test, shared by the bot and the proxy, must not
// split them: the shadow is the bot's database, and the start says that the
// URI named another.
func TestTheShadowIsTheBotsDatabaseWhateverTheURISays(t *testing.T) {
	c, err := Parse(nil, env(with(map[string]string{"MONGODB_URI": "mongodb://u:pw-SECRET@127.0.0.1:1/test"})))
	if err != nil {
		t.Fatal(err)
	}
	if c.Namespaces[0].Database != "miti99bot" {
		t.Fatalf("the shadow database is %q, want the bot's miti99bot", c.Namespaces[0].Database)
	}
	var logs syncbuf.Buffer
	ctx := context.Background() // OpenBackends connects to nothing: the start's probe does, after it
	b, err := OpenBackends(ctx, c, Plumbing{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Close(ctx)
	out := logs.String()
	if !strings.Contains(out, `MONGODB_URI names the database \"test\", but the shadow is \"miti99bot\"`) || !strings.Contains(out, "MONGODB_DB=test") {
		t.Errorf("no warning that the URI names another database:\n%s", out)
	}
	if strings.Contains(out, "SECRET") {
		t.Errorf("the warning quotes the URI's password:\n%s", out)
	}

	// MONGODB_DB chooses; then the URI's database is what it says.
	c, err = Parse(nil, env(with(map[string]string{"MONGODB_URI": "mongodb://127.0.0.1:1/test", "MONGODB_DB": "test"})))
	if err != nil || c.Namespaces[0].Database != "test" {
		t.Fatalf("MONGODB_DB=test: %+v, %v", c.Namespaces, err)
	}
	var quiet syncbuf.Buffer
	if b, err := OpenBackends(ctx, c, Plumbing{Logger: slog.New(slog.NewTextHandler(&quiet, nil))}); err == nil {
		_ = b.Close(context.Background())
	}
	if strings.Contains(quiet.String(), "names the database") {
		t.Errorf("a warning although MONGODB_DB agrees with the URI:\n%s", quiet.String())
	}
}
