package botkv_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/botkv"
	"github.com/kvshadow/kvshadow/tests/mongotest"
	"github.com/kvshadow/kvshadow/tests/nodescript"
)

// openOnce opens and closes a store as a bot's test does, with a fresh
// database and a fresh journal directory (t.TempDir(), docs/go-bot.md),
// both removed afterwards as a test's cleanup does; it returns how long
// the Open took.
func openOnce(b *testing.B, r *rig) time.Duration {
	env := maps.Clone(r.env)
	env["MONGODB_DB"] = mongotest.NewDatabaseName("bench")
	dir, err := os.MkdirTemp("", "botkv-bench")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	env["KVSHADOW_JOURNAL_DIR"] = dir
	start := time.Now()
	st, err := botkv.Open(context.Background(), botkv.Config{Getenv: func(k string) string { return env[k] }}, botkv.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	if err := st.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	client, err := srv.Client()
	if err == nil {
		err = client.Database(env["MONGODB_DB"]).Drop(context.Background())
	}
	if err != nil {
		b.Fatal(err)
	}
	return took
}

func reportMedian(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-median/open")
}

// envOpenChild makes BenchmarkOpen a child of BenchmarkOpenIn8Packages: it
// opens a store for each line read on stdin and writes how long it took.
const envOpenChild = "KVSHADOW_BENCH_OPEN_CHILD"

// BenchmarkOpen opens and closes a store as a bot's test does, in this
// process alone, against its embedded server and the emulator: the median
// Open in ms-median/open.
func BenchmarkOpen(b *testing.B) {
	r := newRig(b)
	if os.Getenv(envOpenChild) != "" {
		for in := bufio.NewScanner(os.Stdin); in.Scan(); {
			fmt.Printf("open-us %d\n", openOnce(b, r).Microseconds())
		}
		return
	}
	var took []time.Duration
	for b.Loop() {
		took = append(took, openOnce(b, r))
	}
	reportMedian(b, took)
}

// BenchmarkOpenIn8Packages is a store per test with 8 test packages in
// parallel: 8 processes of this test binary, each with its own embedded
// server as a package's tests have, open a store at once in every
// iteration, after one round that connects them. It reports the median of
// all their Opens (docs/go-bot.md, "What a store per test costs").
func BenchmarkOpenIn8Packages(b *testing.B) {
	kids := make([]*nodescript.Script, 8)
	for i := range kids {
		cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^BenchmarkOpen$", "-test.benchtime=1x")
		k, err := nodescript.Run("a child", cmd, envOpenChild+"=1")
		if err != nil {
			b.Fatal(err)
		}
		kids[i] = k
	}
	defer func() {
		for _, k := range kids {
			if err := k.End(); err != nil {
				b.Errorf("a child: %v", err)
			}
		}
	}()
	round := func() (took []time.Duration) {
		for _, k := range kids {
			if err := k.Say(""); err != nil {
				b.Fatal(err)
			}
		}
		for _, k := range kids {
			for {
				line, err := k.Next(time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				if us, ok := strings.CutPrefix(line, "open-us "); ok {
					n, err := strconv.Atoi(us)
					if err != nil {
						b.Fatal(err)
					}
					took = append(took, time.Duration(n)*time.Microsecond)
					break
				}
			}
		}
		return took
	}
	round()
	var took []time.Duration
	for b.Loop() {
		took = append(took, round()...)
	}
	reportMedian(b, took)
}
