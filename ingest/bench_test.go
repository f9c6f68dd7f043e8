package ingest_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/ingest"
)

// teeBatch is a batch as a bot invocation's tee sends it: n copies of a
// game state of about 200 bytes of JSON with a TTL, as the seed's modules
// write, and one sampled read.
func teeBatch(n int, now time.Time) []byte {
	type copyJSON struct {
		Key        string `json:"key"`
		Value      string `json:"value"`
		Expiration int64  `json:"expiration,omitempty"`
		AckedAt    int64  `json:"acked_at"`
	}
	state := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte(`{"guesses":["crane","slate"]}`), 7))
	b := struct {
		Namespace string           `json:"namespace"`
		Copies    []copyJSON       `json:"copies"`
		Reads     []map[string]any `json:"reads"`
	}{Namespace: "ns"}
	for i := range n {
		b.Copies = append(b.Copies, copyJSON{Key: fmt.Sprintf("wordle:games:%d", i), Value: state, Expiration: now.Unix() + 3600, AckedAt: now.UnixMilli()})
	}
	b.Reads = append(b.Reads, map[string]any{"key": "wordle:games:0", "found": true, "sha256": fmt.Sprintf("%064x", 7), "length": 203, "read_at": now.UnixMilli()})
	raw, _ := json.Marshal(b)
	return raw
}

// BenchmarkIngestHTTP posts tee batches over loopback HTTP to the handler,
// in front of a dual-write store over two memory stores (stage DualWrite),
// and reports copies ingested per second, for the batch sizes a bot
// invocation sends (3 writes is about the test bot's mean; 100 is the
// tee's largest batch).
func BenchmarkIngestHTTP(b *testing.B) {
	for _, n := range []int{1, 3, 100} {
		b.Run(fmt.Sprintf("copies=%d", n), func(b *testing.B) {
			st, err := dualwrite.New(dualwrite.Config{
				Primary: memory.New(memory.Config{}), Shadow: memory.New(memory.Config{}),
				Stage: dualwrite.DualWrite, LaneDepth: 1 << 16, MaxDirty: 1 << 22,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = st.Close(context.Background()) }()
			h, err := ingest.New(&ingest.DualWrite{Stores: func(string) (*dualwrite.Store, bool) { return st, true }}, ingest.Config{Token: token})
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			body := teeBatch(n, time.Now())
			client := srv.Client()
			b.SetBytes(int64(len(body)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest(http.MethodPost, srv.URL+"/kvshadow/v1/ingest", bytes.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+token)
					req.Header.Set("Content-Type", "application/json")
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_ = resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "copies/s")
		})
	}
}

// BenchmarkDecode is the handler's decoding and checking alone, per batch.
func BenchmarkDecode(b *testing.B) {
	now := time.Now()
	body := teeBatch(3, now)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ingest.Decode(bytes.NewReader(body), ingest.Config{}, now); err != nil {
			b.Fatal(err)
		}
	}
}
