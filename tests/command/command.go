package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/service/admin"
)

// ErrUsage marks a command line mistake: exit 2, as for every command.
var ErrUsage = errors.New("usage")

// Main runs run with the process's arguments until SIGINT or SIGTERM, and
// exits 2 on a usage mistake and 1 on a failure, each said on standard
// error as "name: ..." ("name: FAIL: ..." for a failure).
func Main(name string, run func(ctx context.Context, args []string, out io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	switch {
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintf(os.Stderr, "%s: FAIL: %v\n", name, err)
		os.Exit(1)
	}
}

// Parse parses args into fs: done when there is nothing more to do, after
// -help (err nil) or a mistake (an ErrUsage).
func Parse(fs *flag.FlagSet, args []string) (done bool, err error) {
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		return true, nil
	case err != nil:
		return true, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return false, nil
}

// Excluded is the prefix of the keys the commands leave out of the
// migration, as the guide does: the JavaScript bot's retry queue.
const Excluded = "__retry:"

// Fence is the -fence flag: the proxy's --fence-interval, which the flip to
// live waits for (its default, 65 s, when 0).
func Fence(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("fence", 0, "the proxy's --fence-interval, which the flip to live waits for, with its --tee-lease and --tee-invocation a quarter of it each (default: the proxy's, 65s, 30s and 1s)")
}

// ProxyFlags are the local proxy's flags: on ports it binds itself (a
// caller that hands the front out first holds one: service.WithListener),
// stage dualwrite, miniflare's own writes read at once (no consistency
// window), verification every 5 s, Excluded left out, and a fence of its
// own when fence is not 0; lease is the tee's lease that follows (30 s by
// default).
func ProxyFlags(fence time.Duration) (flags []string, lease time.Duration) {
	flags = []string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--stage", "dualwrite", "--consistency-window", "0",
		"--repair-interval", "5s", "--poll-interval", "500ms", "--exclude-prefix", Excluded}
	if fence == 0 {
		return flags, 30 * time.Second
	}
	// The fence covers the tee's lease plus the longest invocation:
	// shortened together.
	lease = fence / 4
	return append(flags, "--fence-interval", fence.String(), "--tee-lease", lease.String(), "--tee-invocation", lease.String()), lease
}

// Counts is the proxy's counts in one line, as the commands print them.
func Counts(st admin.StatsView) string {
	var verified uint64
	for _, n := range st.Total.Verifications {
		verified += n
	}
	s := st.Summary
	return fmt.Sprintf("stage=%s ops=%d errors=%d breaker=%s copies verified=%d tee reads=%d dirty=%d unsettled=%d divergences confirmed=%d suspected=%d late copies=%d",
		s.Stage, s.Operations, s.Errors, s.Breaker, verified, st.Total.TeeReads, s.Dirty, s.Unsettled, s.Divergences.Confirmed, s.Divergences.Suspected, s.LateCopies)
}

var digits = regexp.MustCompile(`[0-9]+`)

// SetStage moves the stage as PUT /stage does (confirmed: the irreversible
// move confirmed) and waits until the proxy runs it. A flip the proxy holds
// back (409: the fence, lanes, dirty keys) is asked again every second, as
// an operator would after reading GET /stage, for at most five minutes;
// held hears each reason once, not once per second of its countdown.
func SetStage(ctx context.Context, adm *admin.Client, to dualwrite.Stage, confirmed bool, held func(reason string)) (admin.ChangeView, error) {
	set := adm.SetStage
	if confirmed {
		set = adm.SetStageConfirmed
	}
	deadline := time.Now().Add(5 * time.Minute)
	for said := ""; ; {
		c, err := set(ctx, to)
		var refused *admin.Error
		if !errors.As(err, &refused) || refused.Status != http.StatusConflict || time.Now().After(deadline) {
			if err != nil {
				return c, err
			}
			for range 120 {
				if st, err := adm.Stats(ctx); err == nil && st.Summary.Stage == to.String() {
					return c, nil
				}
				time.Sleep(500 * time.Millisecond)
			}
			return c, fmt.Errorf("the proxy does not run %s", to)
		}
		if why := digits.ReplaceAllString(refused.Message, "N"); why != said {
			held(refused.Message)
			said = why
		}
		if err := clock.Sleep(ctx, nil, time.Second); err != nil {
			return c, err
		}
	}
}

// Settled waits until the proxy holds no copy in flight, no dirty key and
// no key left to verify (in complete Workers KV is no longer written, so
// nothing is verified against it any more), and done, when given, holds;
// for at most d. It returns the last stats the proxy gave.
func Settled(ctx context.Context, adm *admin.Client, d time.Duration, done func(context.Context) bool) (admin.StatsView, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var st admin.StatsView
	for {
		if got, err := adm.Stats(ctx); err == nil {
			st = got
			if s := st.Summary; s.Dirty == 0 && (s.Unsettled == 0 || s.Stage == dualwrite.Complete.String()) && st.Total.Queued == 0 && (done == nil || done(ctx)) {
				return st, nil
			}
		}
		if clock.Sleep(ctx, nil, 250*time.Millisecond) != nil {
			return st, fmt.Errorf("the proxy's keys did not settle within %s", d)
		}
	}
}
