package mongokv_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
)

// TestBulkAcrossModules: bulk calls group keys by collection, one command
// per collection; a key given twice keeps its last entry.
func TestBulkAcrossModules(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	events := &driverEvents{}
	s := newStore(t, newClient(t, mongokv.ClientConfig{Options: events.install}), mongokv.Config{Clock: clk})
	exp := clk.Now().Add(time.Hour)
	entries := []kv.Entry{
		{Key: "wordle:1", Value: []byte("first")},
		{Key: "trading:1", Value: []byte("t"), Expiration: exp},
		{Key: "plain", Value: []byte{0xfe}},
		{Key: "wordle:1", Value: []byte("last")},
		{Key: "loldle-emoji:1", Value: []byte("e")},
	}
	if err := s.PutMany(ctx, entries); err != nil {
		t.Fatal(err)
	}
	if got := events.sent("update"); got != 4 {
		t.Errorf("PutMany over 4 collections sent %d update commands, want 4", got)
	}
	keys := []string{"wordle:1", "trading:1", "plain", "loldle-emoji:1", "wordle:missing"}
	events.sent()
	got, err := s.GetMany(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if n := events.sent(); n != 4 {
		t.Errorf("GetMany over 4 collections sent %d commands, want 4", n)
	}
	slices.SortFunc(got, func(a, b kv.Entry) int { return strings.Compare(a.Key, b.Key) })
	want := []kv.Entry{
		{Key: "loldle-emoji:1", Value: []byte("e")},
		{Key: "plain", Value: []byte{0xfe}},
		{Key: "trading:1", Value: []byte("t"), Expiration: exp},
		{Key: "wordle:1", Value: []byte("last")},
	}
	if len(got) != len(want) {
		t.Fatalf("GetMany = %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Key != want[i].Key || string(got[i].Value) != string(want[i].Value) || !got[i].Expiration.Equal(want[i].Expiration) {
			t.Errorf("entry %d = %q %q %v, want %q %q %v", i, got[i].Key, got[i].Value, got[i].Expiration, want[i].Key, want[i].Value, want[i].Expiration)
		}
	}
	if err := s.DeleteMany(ctx, keys); err != nil {
		t.Fatal(err)
	}
	if res, err := s.List(ctx, kv.ListOptions{}); err != nil || len(res.Keys) != 0 {
		t.Fatalf("List after DeleteMany = %q, %v", res.Keys, err)
	}
}

// TestGetManyPastOneReply: documents of nearly 16 MiB each, three of them
// in one $in: MongoDB sends them in replies of 16 MiB, FerretDB in one past
// the driver's 48 MB, which the driver refuses. GetMany reads them all
// either way.
func TestGetManyPastOneReply(t *testing.T) {
	if raceEnabled {
		t.Skip("48 MiB through FerretDB under the race detector, a second a MiB; mongokv's GetMany has no other path under it")
	}
	ctx := t.Context()
	s := newStore(t, newClient(t, mongokv.ClientConfig{}), mongokv.Config{})
	var keys []string
	for i := range 3 {
		k := fmt.Sprintf("files:big%d", i)
		keys = append(keys, k)
		if err := s.Put(ctx, k, bytes.Repeat([]byte{'a' + byte(i)}, 16<<20-1000), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GetMany(ctx, append(keys, "files:missing"))
	if err != nil || len(got) != len(keys) {
		t.Fatalf("GetMany = %d entries, %v; want %d", len(got), err, len(keys))
	}
	for _, e := range got {
		if len(e.Value) != 16<<20-1000 {
			t.Fatalf("%s: %d bytes", e.Key, len(e.Value))
		}
	}
}
