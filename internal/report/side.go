package report

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/kvshadow/kvshadow/budget"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

// Requests counts the requests a run made to one store, retries included.
type Requests struct {
	List    int64 `json:"list"`
	Get     int64 `json:"get"`
	Put     int64 `json:"put"`
	Delete  int64 `json:"delete"`
	Retries int64 `json:"retries"`
	Total   int64 `json:"total"`
}

func (r *Requests) add(o Requests) {
	r.List += o.List
	r.Get += o.Get
	r.Put += o.Put
	r.Delete += o.Delete
	r.Retries += o.Retries
	r.Total = r.List + r.Get + r.Put + r.Delete
}

// side is a store as the engine uses it: every request waits for the
// side's budget, is counted, and is retried after the delay an unavailable
// store asks for. The optional abilities are found once, by assertion.
type side struct {
	role      Role
	name      string
	store     kv.Store
	bulk      kv.BulkGetter
	entries   kv.ExpiryGetter
	puts      kv.BulkPutter
	deletes   kv.BulkDeleter
	bulkLimit int
	retries   int
	clock     clock.Clock
	limit     *budget.Limiter
	budget    Budget
	spent     Requests // asked of the store before the run
	notice    func(format string, args ...any)

	list, get, put, del, retried atomic.Int64
	// waiting counts the requests held back by the budget or a pause, for
	// the progress line.
	waiting atomic.Int64
}

func newSide(role Role, s Side, retries int, clk clock.Clock, notice func(string, ...any)) *side {
	sd := &side{
		role: role, name: s.Name, store: s.Store, bulkLimit: s.BulkLimit,
		retries: retries, clock: clk, limit: budget.New(s.Budget, clk), budget: s.Budget, spent: s.Spent, notice: notice,
	}
	for range s.Spent.List + s.Spent.Get + s.Spent.Put + s.Spent.Delete {
		sd.limit.TryTake() // booked when there is room; they were made already
	}
	sd.bulk, _ = s.Store.(kv.BulkGetter)
	sd.entries, _ = s.Store.(kv.ExpiryGetter)
	sd.puts, _ = s.Store.(kv.BulkPutter)
	sd.deletes, _ = s.Store.(kv.BulkDeleter)
	return sd
}

// expiries reports whether the store's reads carry expiries.
func (s *side) expiries() bool { return s.bulk != nil || s.entries != nil }

func (s *side) requests() Requests {
	r := Requests{List: s.list.Load(), Get: s.get.Load(), Put: s.put.Load(), Delete: s.del.Load(), Retries: s.retried.Load()}
	r.add(s.spent) // and sets Total
	return r
}

// do runs one request within the budget, retrying while the store is
// unavailable and the retries last.
func (s *side) do(ctx context.Context, counter *atomic.Int64, req func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		s.waiting.Add(1)
		err := s.limit.Wait(ctx)
		s.waiting.Add(-1)
		if err != nil {
			return err
		}
		counter.Add(1)
		err = req(ctx)
		if err == nil {
			return nil
		}
		after, unavailable := kv.RetryAfter(err)
		if !unavailable || attempt >= s.retries || ctx.Err() != nil {
			return err
		}
		s.retried.Add(1)
		s.limit.Pause(after)
		// Said on every retry: a long silence would look like a hang.
		s.notice("%s unavailable; pausing its requests for %s, then retry %d of %d",
			s.name, after, attempt+1, s.retries)
	}
}

func (s *side) listPage(ctx context.Context, opts kv.ListOptions) (kv.ListResult, error) {
	var res kv.ListResult
	err := s.do(ctx, &s.list, func(ctx context.Context) error {
		var err error
		res, err = s.store.List(ctx, opts)
		return err
	})
	return res, err
}

// fetch reads keys and returns one observation per key, in order. A read
// that fails after its retries becomes an observation with Err; only the
// end of ctx fails the whole fetch.
func (s *side) fetch(ctx context.Context, keys []string) ([]compare.Observation, error) {
	obs := make([]compare.Observation, len(keys))
	if s.bulk != nil {
		for lo := 0; lo < len(keys); lo += s.bulkLimit {
			chunk := keys[lo:min(lo+s.bulkLimit, len(keys))]
			if err := s.fetchBulk(ctx, chunk, obs[lo:]); err != nil {
				return nil, err
			}
		}
		return obs, nil
	}
	for i, k := range keys {
		e, err := s.getOne(ctx, k)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, kv.ErrNotFound):
		case err != nil:
			obs[i] = compare.Observation{Err: err}
		default:
			obs[i] = compare.Observation{Found: true, Value: e.Value, Expiration: utc(e.Expiration), Metadata: e.Metadata}
		}
	}
	return obs, nil
}

// getOne reads one key, with its expiry when the store gives it.
func (s *side) getOne(ctx context.Context, key string) (e kv.Entry, err error) {
	err = s.do(ctx, &s.get, func(ctx context.Context) error {
		if s.entries != nil {
			e, err = s.entries.GetEntry(ctx, key)
		} else {
			e = kv.Entry{Key: key}
			e.Value, err = s.store.Get(ctx, key)
		}
		return err
	})
	return e, err
}

// fetchBulk reads keys in one bulk request when the answer fits in one
// (kv.ReadSplit asks again in halves when the store refuses it as too
// large, down to a key read alone), each request within the budget and
// counted, so that a large value never holds back the keys read with it.
func (s *side) fetchBulk(ctx context.Context, keys []string, obs []compare.Observation) error {
	many := func(ctx context.Context, keys []string) (got []kv.Entry, err error) {
		err = s.do(ctx, &s.get, func(ctx context.Context) error {
			got, err = s.bulk.GetMany(ctx, keys)
			return err
		})
		return got, err
	}
	lo := 0
	return kv.ReadSplit(ctx, keys, many, s.getOne, func(part []string, got []kv.Entry, err error) error {
		at := lo
		lo += len(part)
		if err != nil {
			for i := range part {
				obs[at+i] = compare.Observation{Err: err}
			}
			return nil
		}
		byKey := make(map[string]kv.Entry, len(got))
		for _, e := range got {
			byKey[e.Key] = e
		}
		for i, k := range part {
			if e, ok := byKey[k]; ok {
				obs[at+i] = compare.Observation{Found: true, Value: e.Value, Expiration: utc(e.Expiration), Metadata: e.Metadata}
			}
		}
		return nil
	})
}

// writeAll puts entries (each with its absolute expiry, zero for none),
// in bulk when the store can, and returns the keys that failed.
func (s *side) writeAll(ctx context.Context, entries []kv.Entry) (failed []string, err error) {
	write, size := func(ctx context.Context, c []kv.Entry) error { return kv.PutEntry(ctx, s.store, c[0]) }, 1
	if s.puts != nil {
		write, size = s.puts.PutMany, s.bulkLimit
	}
	return chunked(ctx, entries, size, func(ctx context.Context, c []kv.Entry) error {
		return s.do(ctx, &s.put, func(ctx context.Context) error { return write(ctx, c) })
	}, func(e kv.Entry) string { return e.Key })
}

// deleteAll deletes keys, in bulk when the store can, and returns the keys
// that failed.
func (s *side) deleteAll(ctx context.Context, keys []string) (failed []string, err error) {
	del, size := func(ctx context.Context, c []string) error { return s.store.Delete(ctx, c[0]) }, 1
	if s.deletes != nil {
		del, size = s.deletes.DeleteMany, s.bulkLimit
	}
	return chunked(ctx, keys, size, func(ctx context.Context, c []string) error {
		return s.do(ctx, &s.del, func(ctx context.Context) error { return del(ctx, c) })
	}, func(k string) string { return k })
}

// chunked writes items size at a time and returns the keys of the chunks
// that failed; only the end of ctx fails the whole.
func chunked[T any](ctx context.Context, items []T, size int, write func(context.Context, []T) error, key func(T) string) (failed []string, err error) {
	for lo := 0; lo < len(items); lo += size {
		chunk := items[lo:min(lo+size, len(items))]
		werr := write(ctx, chunk)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if werr != nil {
			for _, it := range chunk {
				failed = append(failed, key(it))
			}
		}
	}
	return failed, nil
}

// utc keeps report times in one zone whatever zone a backend parsed them in.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}
