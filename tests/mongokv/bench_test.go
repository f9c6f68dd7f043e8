package mongokv_test

import (
	"fmt"
	"testing"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/kv"
)

// benchStore returns a store on a fresh database whose client counts the
// commands it sends, warmed up: connected, with the collection and its TTL
// index asked for, so that the loop measures the steady state.
func benchStore(b *testing.B) (*mongokv.Store, *driverEvents) {
	b.Helper()
	events := &driverEvents{}
	s := newStore(b, newClient(b, mongokv.ClientConfig{Options: events.install}), mongokv.Config{})
	if err := s.Put(b.Context(), "wordle:warm", []byte("v"), kv.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	return s, events
}

// measure runs op b.N times and reports round trips (commands sent) per op
// alongside ns/op and allocs/op.
func measure(b *testing.B, events *driverEvents, op func(i int) error) {
	b.Helper()
	events.sent()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := op(i); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(events.sent())/float64(b.N), "roundtrips/op")
}

func BenchmarkGet(b *testing.B) {
	s, events := benchStore(b)
	value := []byte(`{"word":"apple","guesses":["crane","slate"]}`)
	if err := s.Put(b.Context(), "wordle:games:42", value, kv.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	measure(b, events, func(int) error {
		_, err := s.Get(b.Context(), "wordle:games:42")
		return err
	})
}

func BenchmarkPut(b *testing.B) {
	s, events := benchStore(b)
	value := []byte(`{"word":"apple","guesses":["crane","slate"]}`)
	measure(b, events, func(i int) error {
		return s.Put(b.Context(), fmt.Sprintf("wordle:games:%d", i%100), value, kv.PutOptions{})
	})
}

func BenchmarkDelete(b *testing.B) {
	s, events := benchStore(b)
	measure(b, events, func(i int) error {
		return s.Delete(b.Context(), fmt.Sprintf("wordle:missing:%d", i))
	})
}

// BenchmarkListPage reads the first page of 100 keys of one module.
func BenchmarkListPage(b *testing.B) {
	s, events := benchStore(b)
	seedBench(b, s, "wordle:", 200)
	measure(b, events, func(int) error {
		res, err := s.List(b.Context(), kv.ListOptions{Prefix: "wordle:", Limit: 100})
		if err == nil && len(res.Keys) != 100 {
			err = fmt.Errorf("page of %d keys", len(res.Keys))
		}
		return err
	})
}

// BenchmarkListPageAllModules reads a page of the raw store, which merges
// the collections of three modules and lists the collections first.
func BenchmarkListPageAllModules(b *testing.B) {
	s, events := benchStore(b)
	for _, m := range []string{"wordle:", "trading:", "loldle-emoji:"} {
		seedBench(b, s, m, 60)
	}
	measure(b, events, func(int) error {
		_, err := s.List(b.Context(), kv.ListOptions{Limit: 100})
		return err
	})
}

func BenchmarkGetMany100(b *testing.B) {
	s, events := benchStore(b)
	keys := seedBench(b, s, "wordle:", 100)
	measure(b, events, func(int) error {
		got, err := s.GetMany(b.Context(), keys)
		if err == nil && len(got) != len(keys) {
			err = fmt.Errorf("%d entries", len(got))
		}
		return err
	})
}

// BenchmarkPutMany10000 writes 10,000 keys of one module: ten BulkWrites of
// 1,000. It is slow on FerretDB (each statement is its own SQLite
// transaction); the round trips are the point.
func BenchmarkPutMany10000(b *testing.B) {
	s, events := benchStore(b)
	entries := make([]kv.Entry, 10_000)
	for i := range entries {
		entries[i] = kv.Entry{Key: fmt.Sprintf("wordle:bulk:%05d", i), Value: []byte(`{"n":1}`)}
	}
	measure(b, events, func(int) error { return s.PutMany(b.Context(), entries) })
}

func seedBench(b *testing.B, s *mongokv.Store, prefix string, n int) []string {
	b.Helper()
	keys := make([]string, n)
	entries := make([]kv.Entry, n)
	for i := range entries {
		keys[i] = fmt.Sprintf("%s%04d", prefix, i)
		entries[i] = kv.Entry{Key: keys[i], Value: []byte("v")}
	}
	if err := s.PutMany(b.Context(), entries); err != nil {
		b.Fatal(err)
	}
	return keys
}
