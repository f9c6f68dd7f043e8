package report_test

import (
	"context"
	"fmt"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/kv"
)

// A scan of two stores, then a repair that makes the shadow agree.
func ExampleRun() {
	ctx := context.Background()
	primary, shadow := memory.New(memory.Config{}), memory.New(memory.Config{})
	_ = primary.Put(ctx, "wordle:games:1", []byte(`{"word":"crane"}`), kv.PutOptions{})
	_ = primary.Put(ctx, "wordle:games:2", []byte(`{"word":"slate"}`), kv.PutOptions{TTL: time.Hour})
	_ = shadow.Put(ctx, "wordle:games:1", []byte(`{"word":"crane"}`), kv.PutOptions{})
	_ = shadow.Put(ctx, "trading:quote:BTC", []byte("97000"), kv.PutOptions{})

	cfg := report.Config{
		Primary:   report.Side{Store: primary, Name: "cloudflare_kv"},
		Shadow:    report.Side{Store: shadow, Name: "mongodb"},
		KeyPolicy: compare.KeyPlain,
	}
	r, err := report.Run(ctx, cfg)
	if err != nil {
		panic(err)
	}
	for _, d := range r.Divergences {
		fmt.Println(d.Kind, d.Key)
	}
	fmt.Printf("parity %.2f%%, passed %v\n", r.Parity, r.Passed)

	cfg.Repair = report.Repair{Enabled: true, Apply: true} // the primary is authoritative
	r, _ = report.Run(ctx, cfg)
	fmt.Printf("repaired: %d put, %d deleted, %d verified; parity after %.2f%%\n",
		r.Repair.Puts, r.Repair.Deletes, r.Repair.Verified, r.Repair.ParityAfter)
	// Output:
	// extra_in_shadow trading:quote:BTC
	// missing_in_shadow wordle:games:2
	// parity 33.33%, passed false
	// repaired: 1 put, 1 deleted, 2 verified; parity after 100.00%
}
