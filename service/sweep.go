package service

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// sweeper is a shadow store that keeps documents a sweep must remove
// (mongokv.Store: expired documents where the server has no TTL monitor,
// the chunks of a value the bot deleted or overwrote, or of a Put cut
// short).
type sweeper interface {
	RunSweeper(ctx context.Context, interval time.Duration) error
	Database() string
}

// startSweepers runs one sweeper per shadow database the namespaces use,
// every interval, until the returned stop is called; stop waits for them.
func startSweepers(sides []Sides, interval time.Duration, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	seen := map[string]bool{}
	for _, sd := range sides {
		sw, ok := sd.Shadow.(sweeper)
		if !ok || seen[sw.Database()] {
			continue
		}
		seen[sw.Database()] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := sw.RunSweeper(ctx, interval)
			if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, kv.ErrClosed) {
				log.Warn("kvshadow-proxy: the chunk sweeper stopped", slog.String("database", sw.Database()), slog.String("error", err.Error()))
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}
