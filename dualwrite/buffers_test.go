package dualwrite_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// fillValue writes into buf a value for key that says of itself whose it
// is: "key|seq|" then one byte repeated, to n bytes in all.
func fillValue(buf []byte, key string, seq, n int) []byte {
	buf = append(buf[:0], key...)
	buf = append(buf, '|')
	buf = strconv.AppendInt(buf, int64(seq), 10)
	buf = append(buf, '|')
	fill := byte('a' + seq%26)
	for len(buf) < n {
		buf = append(buf, fill)
	}
	return buf
}

// wellFormed reports whether v is a whole value fillValue made for key.
func wellFormed(key string, v []byte) bool {
	rest, ok := bytes.CutPrefix(v, []byte(key+"|"))
	if !ok {
		return false
	}
	num, fill, ok := bytes.Cut(rest, []byte("|"))
	seq, err := strconv.Atoi(string(num))
	if !ok || err != nil {
		return false
	}
	return len(bytes.Trim(fill, string(rune('a'+seq%26)))) == 0
}

// checkingStore is a shadow that checks each value it is given, when the
// call starts and again when it ends, after yielding to every other
// goroutine: a buffer recycled while its copy runs shows there.
type checkingStore struct {
	kv.Store
	torn atomic.Int64
}

func (c *checkingStore) Put(ctx context.Context, key string, value []byte, opts kv.PutOptions) error {
	before := bytes.Clone(value)
	if !wellFormed(key, value) {
		c.torn.Add(1)
	}
	for range 3 {
		runtime.Gosched()
	}
	err := c.Store.Put(ctx, key, value, opts)
	if !bytes.Equal(before, value) {
		c.torn.Add(1)
	}
	return err
}

// TestCopiesOwnTheirValues writes through the Store from writers that each
// reuse one buffer at once, over few keys (so copies coalesce) with short
// lanes and a small byte budget (so copies are refused), at sizes from
// every class of recycled buffer and beyond. Every value the shadow is
// given must be whole and its own key's, unchanged while its call runs,
// and once the lanes drain each key the shadow holds must equal the
// primary's unless its copies were dropped. Without the copies' own
// buffers, or with a buffer recycled before its copy ends, it fails.
func TestCopiesOwnTheirValues(t *testing.T) {
	ctx := context.Background()
	primary, shadowMem := memory.New(memory.Config{}), memory.New(memory.Config{})
	shadow := &checkingStore{Store: shadowMem}
	s, err := dualwrite.New(dualwrite.Config{
		Primary: primary, Shadow: shadow, Stage: dualwrite.DualWrite,
		Lanes: 2, LaneDepth: 4, MaxQueueBytes: 64 << 10,
		ConsistencyWindow: -1, RepairInterval: never,
	}, dualwrite.WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	sizes := []int{40, 129, 300, 1000, 5000, 16 << 10, 20 << 10}
	const writers, writes, keys = 4, 3000, 12
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			var buf []byte
			for i := range writes {
				key := fmt.Sprintf("k%02d", (i*7+w)%keys)
				buf = fillValue(buf, key, w*writes+i, sizes[(i+w)%len(sizes)])
				if err := s.Put(ctx, key, buf, kv.PutOptions{}); err != nil {
					t.Error(err)
					return
				}
				// The caller reuses its buffer at once.
				for j := range buf {
					buf[j] = '#'
				}
			}
		})
	}
	wg.Wait()
	must(t, s.Flush(ctx))
	if n := shadow.torn.Load(); n > 0 {
		t.Fatalf("the shadow was given %d values torn or changed during its call", n)
	}
	st := s.Stats()
	t.Logf("coalesced %d, dropped %v", st.Coalesced, st.Drops)
	for i := range keys {
		key := fmt.Sprintf("k%02d", i)
		want, err := primary.Get(ctx, key)
		must(t, err)
		got, err := shadowMem.Get(ctx, key)
		must(t, err)
		if !wellFormed(key, got) {
			t.Fatalf("shadow %s = %.40q…: not a value written for it", key, got)
		}
		if !bytes.Equal(got, want) && st.Dirty == 0 {
			t.Fatalf("shadow %s = %.40q…, primary %.40q…, with no key dirty", key, got, want)
		}
	}
}
