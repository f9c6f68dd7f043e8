package dualwrite

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Journal keeps the settle set on durable storage, so that the keys not yet
// settled survive a crash or a restart. The Store records each change in
// memory before the caller's write returns and commits the changes in
// groups from its own goroutine, never on the caller's path. Package
// journal implements it over bbolt.
//
// The Store calls Load once, from New, and Commit from one goroutine at a
// time; the Journal belongs to the program, which closes it after the
// Store's Close.
type Journal interface {
	// Load returns every key the journal holds, with its mark, and whether
	// a full reconciliation is needed.
	Load(ctx context.Context) (marks map[string]Mark, reconcile bool, err error)
	// Commit applies changes (MarkSettled removes a key) and sets the
	// reconciliation flag, durably and atomically: after a crash either
	// the whole group is there or none of it. The Store does not keep
	// changes after Commit returns.
	Commit(ctx context.Context, changes map[string]Mark, reconcile bool) error
}

// journalRetry is how long the committer waits after a failed commit.
const journalRetry = time.Second

// commitLoop commits the settle set's changes in groups: as soon as there
// are changes and the previous commit has ended, so that a group holds
// what arrived during one commit. A SIGKILL loses at most the changes of
// the commit under way and those made since it began.
func (s *Store) commitLoop() {
	for {
		select {
		case <-s.commitKick:
		case <-s.quit:
			return
		}
		if err := s.commit(context.Background()); err != nil {
			t := s.clock.NewTimer(journalRetry)
			select {
			case <-t.C():
				s.kickCommit()
			case <-s.quit:
				t.Stop()
				return
			}
		}
	}
}

// commit hands the set's changes to the journal; a failure gives them back.
func (s *Store) commit(ctx context.Context) error {
	changes, reconcile, moved := s.set.take()
	if len(changes) == 0 && !moved {
		return nil
	}
	err := s.journalCommit(ctx, changes, reconcile)
	if err != nil {
		s.set.untake(changes, moved)
		s.ctr.journalErrors.Add(1)
		s.journalOK.Store(false)
		s.warnOnce("dualwrite: the settle journal cannot commit; unsettled keys will not survive a crash until it can",
			slog.String("error", err.Error()))
		return err
	}
	s.ctr.journalCommits.Add(1)
	s.journalOK.Store(true)
	return nil
}

func (s *Store) journalCommit(ctx context.Context, changes map[string]Mark, reconcile bool) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("dualwrite: the journal panicked: %v", v)
		}
	}()
	return s.journal.Commit(ctx, changes, reconcile)
}

// kickCommit wakes the committer without blocking.
func (s *Store) kickCommit() {
	select {
	case s.commitKick <- struct{}{}:
	default:
	}
}

// loadJournal fills the settle set from the journal. A key loaded is ready
// from now: the writes before the restart may be younger than the window.
func (s *Store) loadJournal(ctx context.Context) error {
	marks, reconcile, err := s.journal.Load(ctx)
	if err != nil {
		return fmt.Errorf("dualwrite: loading the settle journal: %w", err)
	}
	now := s.clock.Now()
	for k, m := range marks {
		s.set.load(k, m, now)
	}
	if reconcile {
		s.set.mu.Lock()
		s.set.reconcile = true
		s.set.mu.Unlock()
	}
	s.ctr.loaded.Store(uint64(len(marks)))
	return nil
}
