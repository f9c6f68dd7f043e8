package service

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// --shadow-rate paces what the instance sends MongoDB: a bulk write of 60
// keys through the front reaches the shadow at most 20 copies a second
// (counted by the shadow, over a window a little over a second, with room
// for the scheduler), every copy arriving, the waits counted in /stats;
// without the flag the 60 arrive at once.
func TestShadowRatePacesTheCopies(t *testing.T) {
	r := start(t, "--shadow-rate", "20", "--compare-rate", "0")
	ctx := t.Context()
	batch := make([]kv.Entry, 60)
	for i := range batch {
		batch[i] = kv.Entry{Key: fmt.Sprintf("wordle:paced:%02d", i), Value: []byte("v")}
	}
	shadow := r.shadows[DemoNamespace]
	type sample struct {
		at     time.Time
		writes uint64
	}
	samples := []sample{{time.Now(), shadow.Stats().Writes}}
	if err := r.client(t, DemoNamespace).PutMany(ctx, batch); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the 60 copies in the shadow", func() bool {
		samples = append(samples, sample{time.Now(), shadow.Stats().Writes})
		return samples[len(samples)-1].writes-samples[0].writes >= 60
	})
	most := uint64(0)
	for i, a := range samples {
		for _, b := range samples[i:] {
			if b.at.Sub(a.at) <= time.Second {
				most = max(most, b.writes-a.writes)
			}
		}
	}
	if most > 25 {
		t.Fatalf("the shadow took %d copies within a second: --shadow-rate 20 does not hold", most)
	}
	if p := r.stats(t).Total.ShadowPacing; p.Delayed == 0 || p.Waited == 0 {
		t.Fatalf("shadow_pacing %+v: the waits are not counted", p)
	}
}

func TestShadowRateRefusesANegativeRate(t *testing.T) {
	if _, err := Parse([]string{"--demo", "--shadow-rate", "-1"}, env(nil)); !errors.Is(err, ErrUsage) {
		t.Fatalf("--shadow-rate -1: %v", err)
	}
}
