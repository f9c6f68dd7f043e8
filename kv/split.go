package kv

import (
	"context"
	"errors"
)

// ReadSplit reads keys with many, a bulk read, in as few calls as the
// store's limit on one reply allows, and hands each answer to piece before
// it makes the next call, so that one answer at a time is held. A call
// refused with ErrTooLarge is split in two halves, and each half is asked
// again; a key refused alone is read with one, which has no such limit (a
// value's own read returns up to MaxValueSize). So a large key costs its own
// read and never holds back the keys asked with it.
//
// piece gets the keys an answer covers, in the order of keys, with the
// entries found (a missing key is absent) or the error that call ended with;
// one reports a missing key as ErrNotFound. ReadSplit stops at the first
// error piece returns, or when ctx ends, and returns it; other errors are
// piece's to judge.
func ReadSplit(ctx context.Context, keys []string,
	many func(context.Context, []string) ([]Entry, error),
	one func(context.Context, string) (Entry, error),
	piece func(keys []string, got []Entry, err error) error,
) error {
	if len(keys) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	got, err := many(ctx, keys)
	if errors.Is(err, ErrTooLarge) {
		if len(keys) > 1 {
			half := len(keys) / 2
			if err := ReadSplit(ctx, keys[:half], many, one, piece); err != nil {
				return err
			}
			return ReadSplit(ctx, keys[half:], many, one, piece)
		}
		got = nil
		var e Entry
		switch e, err = one(ctx, keys[0]); {
		case err == nil:
			e.Key = keys[0]
			got = []Entry{e}
		case errors.Is(err, ErrNotFound):
			err = nil
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return piece(keys, got, err)
}
