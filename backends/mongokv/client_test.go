package mongokv

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

const marker = "PW-MARKER-5f1d"

func TestRedactor(t *testing.T) {
	for uri, secrets := range map[string][]string{
		"mongodb://user:" + marker + "@h1:27017,h2/db?replicaSet=rs":                                 {marker},
		"mongodb+srv://user:" + marker + "%40x@cluster.example/?retryWrites=true":                    {marker + "@x", marker + "%40x"},
		"mongodb://user:" + marker + "@@h/db":                                                        {marker, marker + "@"},
		"mongodb://h/?tlsCertificateKeyFilePassword=" + marker + "&appName=a":                        {marker},
		"mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:" + marker: {marker},
	} {
		r := newRedactor(uri)
		for _, secret := range secrets {
			msg := "dial " + uri + " failed; password " + secret + "."
			if got := r.redact(msg); strings.Contains(got, marker) {
				t.Errorf("redact kept a secret of %q: %q", uri, got)
			}
		}
	}
	// Text without secrets is left alone.
	if got := newRedactor("mongodb://localhost/").redact("server selection error"); got != "server selection error" {
		t.Errorf("redact changed plain text: %q", got)
	}
}

func TestNewClientChecksWithoutIO(t *testing.T) {
	for _, uri := range []string{"", "http://" + marker + "@h", "localhost:27017", "mongodb://u:" + marker + "@h/bad.db", "mongodb://u:" + marker + "@h/%zz"} {
		_, err := NewClient(ClientConfig{URI: uri})
		if err == nil {
			t.Errorf("NewClient(%q) accepted it", uri)
			continue
		}
		if strings.Contains(err.Error(), marker) {
			t.Errorf("NewClient error quotes the URI's secret: %v", err)
		}
	}
	if _, err := NewClient(ClientConfig{URI: "mongodb://h", ServerSelectionTimeout: -1}); err == nil {
		t.Error("a negative timeout was accepted")
	}
	if DefaultDatabase != "miti99bot" {
		t.Errorf("DefaultDatabase = %q, want the bot's, miti99bot", DefaultDatabase)
	}
	for uri, want := range map[string]string{
		"mongodb://h":                        DefaultDatabase,
		"mongodb://h/":                       DefaultDatabase,
		"mongodb://u:p@h1,h2/miti99bot?w=1":  "miti99bot",
		"mongodb+srv://u:p%2F@cluster/botdb": "botdb",
		"mongodb://u:p@h/?authSource=admin":  DefaultDatabase,
	} {
		c, err := NewClient(ClientConfig{URI: uri})
		if err != nil {
			t.Fatalf("NewClient(%q): %v", uri, err)
		}
		s, err := c.Store(Config{})
		if err != nil || s.Database() != want {
			t.Errorf("Store of %q: database %q, %v; want %q", uri, s.Database(), err, want)
		}
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("Close without a connection: %v", err)
		}
	}
}

// URIDatabase says what the URI names, not what a Store would open, so
// that a tool can warn when the URI and the bot's database differ.
func TestURIDatabase(t *testing.T) {
	for uri, want := range map[string]string{
		"mongodb://h":                            "",
		"mongodb://u:p@h/?authSource=admin":      "",
		"mongodb+srv://u:p@cluster.example/test": "test",
		"mongodb://h/miti99bot":                  "miti99bot",
	} {
		c, err := NewClient(ClientConfig{URI: uri})
		if err != nil {
			t.Fatalf("NewClient(%q): %v", uri, err)
		}
		if got := c.URIDatabase(); got != want {
			t.Errorf("URIDatabase of %q = %q, want %q", uri, got, want)
		}
	}
}

func TestStoreConfig(t *testing.T) {
	c, err := NewClient(ClientConfig{URI: "mongodb://h"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []Config{{Database: "a.b"}, {Database: strings.Repeat("d", 64)}, {MaxDocumentSize: MinDocumentSize - 1}, {MaxDocumentSize: MaxDocumentSize + 1}, {MaxDocumentSize: -1}} {
		if _, err := c.Store(cfg); err == nil {
			t.Errorf("Store(%+v) accepted it", cfg)
		}
	}
	s, err := c.Store(Config{Database: "miti99bot", MaxDocumentSize: MinDocumentSize})
	if err != nil || s.Database() != "miti99bot" {
		t.Fatalf("Store = %v, %v", s, err)
	}
	// Invalid input fails before any I/O: this client has no server.
	if _, err := s.Get(context.Background(), ""); !errors.Is(err, kv.ErrInvalidKey) {
		t.Errorf("Get(\"\") = %v", err)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(context.Background(), "k"); !errors.Is(err, kv.ErrClosed) {
		t.Errorf("Get after Close = %v, want kv.ErrClosed", err)
	}
}

// TestAnOutageIsSaidOnceThenReminded: the failed connects of one outage
// are said at the first (by the Client, or by the caller of Connect),
// then once every connectReminder however many fail, counting them; a
// connect that works ends the outage.
func TestAnOutageIsSaidOnceThenReminded(t *testing.T) {
	at := time.Unix(1e9, 0)
	for _, told := range []bool{false, true} {
		var o outage
		if msg := o.note(at, told); (msg != "") == told {
			t.Errorf("told %v: the first failure says %q", told, msg)
		}
		for i := 1; i < 50; i++ {
			if msg := o.note(at.Add(time.Duration(i)*time.Second), told); msg != "" {
				t.Fatalf("told %v: failure %d, %d s in, says %q; want nothing until the reminder", told, i+1, i, msg)
			}
		}
		msg := o.note(at.Add(connectReminder), told)
		if !strings.Contains(msg, "still unreachable") || !strings.Contains(msg, "51 connects failed") {
			t.Errorf("told %v: the reminder says %q", told, msg)
		}
		if msg := o.note(at.Add(connectReminder+time.Second), told); msg != "" {
			t.Errorf("told %v: a failure just after the reminder says %q", told, msg)
		}
	}
}
