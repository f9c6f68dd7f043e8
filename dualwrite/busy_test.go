package dualwrite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// busyCounts is what a busy namespace's late copies cost.
type busyCounts struct {
	applied, stale, oldApplied int // newer late copies applied, copies refused as stale, older ones applied
	differed, repaired         int // verifications that found the stores different, repairs
}

// busyNamespace settles 12,288 keys, three times what the settle set
// remembers, in rounds of 1,024 tee copies a minute apart; two rounds
// after a key settled, two late copies of it arrive: one acknowledged
// just before its settled write (stale: it must never be applied), one
// just after it, a real newer write the binding made, yet acknowledged
// before the writes of the keys settled since.
func busyNamespace(t *testing.T) busyCounts {
	const rounds, batch = 12, 1024
	p := newPair(t, dualwrite.Config{Stage: dualwrite.DualWrite, LaneDepth: 1 << 14})
	ctx := context.Background()
	name := func(r, j int) string { return fmt.Sprintf("wordle:busy%02d-%04d", r, j) }
	acked := make([][]time.Time, rounds)
	var c busyCounts
	for r := range rounds {
		now := p.clk.Now()
		var copies []dualwrite.TeeWrite
		acked[r] = make([]time.Time, batch)
		for j := range batch {
			acked[r][j] = now.Add(-2*time.Second + time.Duration(j)*time.Millisecond)
			must(t, p.primary.Store.Put(ctx, name(r, j), []byte("v1"), kv.PutOptions{}))
			copies = append(copies, dualwrite.TeeWrite{Key: name(r, j), Value: []byte("v1"), At: acked[r][j]})
		}
		must(t, p.store.Ingest(ctx, copies))
		if l := r - 2; l >= 0 {
			newer, older := make([]dualwrite.TeeWrite, batch), make([]dualwrite.TeeWrite, batch)
			for j := range batch {
				must(t, p.primary.Store.Put(ctx, name(l, j), []byte("v2"), kv.PutOptions{}))
				newer[j] = dualwrite.TeeWrite{Key: name(l, j), Value: []byte("v2"), At: acked[l][j].Add(time.Millisecond / 2)}
				older[j] = dualwrite.TeeWrite{Key: name(l, j), Value: []byte("v0"), At: acked[l][j].Add(-time.Millisecond / 2)}
			}
			must(t, p.store.Ingest(ctx, newer))
			must(t, p.store.Ingest(ctx, older))
		}
		p.flush()
		if l := r - 2; l >= 0 {
			for j := range batch {
				switch valueOf(t, p.shadow.Store, name(l, j)) {
				case "v2":
					c.applied++
				case "v0":
					c.oldApplied++
				}
			}
		}
		p.settle()
	}
	st := p.store.Stats()
	c.stale = int(st.IngestStale)
	for pass := 0; st.Unsettled+st.Dirty > 0 && pass < 20; pass++ {
		p.clk.Advance(window)
		p.store.RepairDirty()
		p.settle()
		st = p.store.Stats()
	}
	for k, n := range st.Verifications {
		if k != compare.Match {
			c.differed += int(n)
		}
	}
	for _, n := range st.Repairs {
		c.repaired += int(n)
	}
	if st.Unsettled+st.Dirty > 0 {
		t.Fatalf("not settled after 20 passes: unsettled %d, dirty %d", st.Unsettled, st.Dirty)
	}
	sameContents(t, p.primary.Store, p.shadow.Store)
	late := (rounds - 2) * batch
	t.Logf("late copies: %d newer, %d applied, %d refused as stale; %d older, %d applied, %d refused as stale; verifications that differed %d, repairs %d; verifications %v",
		late, c.applied, late-c.applied, late, c.oldApplied, c.stale-(late-c.applied), c.differed, c.repaired, nonzero(st.Verifications))
	return c
}

// On a busy namespace a late copy newer than its key's settled write is
// applied, whatever other keys settled since, as long as the settle set
// remembers its key's write (the latest 4,096 settled writes); one older
// than it never is. Before the settle set let its writes go oldest first
// (it cleared them all at 4,096 keys), about 6,000 newer copies of 10,240
// were verified instead, and as many older ones applied.
func TestBusyNamespaceLateCopies(t *testing.T) {
	c := busyNamespace(t)
	if c.applied != 10_240 || c.oldApplied != 0 || c.stale != 10_240 || c.differed != 0 || c.repaired != 0 {
		t.Fatalf("late copies: %d newer applied, %d older applied, %d stale, %d verifications differed, %d repairs; want 10,240, 0, 10,240, 0, 0",
			c.applied, c.oldApplied, c.stale, c.differed, c.repaired)
	}
}

// A copy older than its key's settled write, sent again and again (a tee's
// retries), is never applied: the first, refused, puts the key back in the
// set, which still knows the settled write.
func TestARetriedStaleCopyIsNeverApplied(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.DualWrite})
	ctx := context.Background()
	must(t, p.primary.Store.Put(ctx, "wordle:r", []byte("v2"), kv.PutOptions{}))
	t1, t2 := start.Add(-2*time.Second), start.Add(-time.Second)
	must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: "wordle:r", Value: []byte("v2"), At: t2}}))
	p.settle()
	for try := range 3 {
		must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: "wordle:r", Value: []byte("v1"), At: t1}}))
		p.flush()
		if v := valueOf(t, p.shadow.Store, "wordle:r"); v != "v2" {
			t.Fatalf("try %d: the shadow has %q: an older copy was applied over the settled write", try, v)
		}
	}
	if st := p.store.Stats(); st.IngestStale != 3 {
		t.Fatalf("stale %d, want 3", st.IngestStale)
	}
}
