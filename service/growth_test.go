package service

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/keep"
	"github.com/kvshadow/kvshadow/service/admin"
)

// One client with the clients' token sends, in live and within the fence
// after the flip (when copies are still credible), twelve late copies of
// 10 MiB that each conflict: the sides kept stay within their share of the
// memory budget and the rate, the rest are recorded as not kept (each
// counted), the oldest pushed out past that share, and the process holds
// no more than its budget. The fence is long, so that a slow run (the race
// detector on a loaded machine) still sends every copy within it.
func TestConflictGrowthFromOneTokenStaysBounded(t *testing.T) {
	const budget, copies = 96 << 20, 12
	var kept *keep.MemoryStore
	r := startWith(t, func(b *Backends) { kept = b.Kept.(*keep.MemoryStore) },
		"--stage", "live", "--fence-interval", "10m", "--memory-budget", fmt.Sprint(budget))
	value := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("\x00forged", 10<<20/7)))
	for i := range copies {
		batch := fmt.Sprintf(`{"namespace":%q,"copies":[{"key":"wordle:grow-%d","value":%q,"acked_at":%d}]}`,
			DemoNamespace, i, value, time.Now().UnixMilli())
		if code, body := r.tee(t, TeePath+"ingest", batch); code != http.StatusOK {
			t.Fatalf("copy %d: %d %.200s", i, code, body)
		}
	}
	var out admin.ConflictsView
	if code := r.call(t, "GET", "/conflicts", "", &out); code != http.StatusOK {
		t.Fatalf("GET /conflicts: %d", code)
	}
	rec := out.Namespaces[DemoNamespace].Recorded
	unkept, why := 0, ""
	for _, c := range rec.Conflicts {
		if c.KeepError != "" {
			unkept, why = unkept+1, c.KeepError
		}
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("%d copies of 10 MiB: %d recorded, %d not kept (%s), %d MiB kept of at most %d, heap %d MiB after a collection",
		copies, rec.Total, unkept, why, kept.Bytes()>>20, kept.MaxKeptBytes()>>20, ms.HeapAlloc>>20)
	if rec.Total != copies || out.Unrecorded != 0 {
		t.Fatalf("%d conflicts recorded, %d not: every one is recorded, kept or not", rec.Total, out.Unrecorded)
	}
	if kept.Bytes() > kept.MaxKeptBytes() || kept.MaxKeptBytes() > budget/4 {
		t.Fatalf("%d bytes kept (at most %d), %d not kept: kept sides are not bounded by the budget", kept.Bytes(), kept.MaxKeptBytes(), unkept)
	}
	if ms.HeapAlloc > budget {
		t.Fatalf("the heap holds %d MiB after a collection, over the %d MiB budget", ms.HeapAlloc>>20, budget>>20)
	}
}
