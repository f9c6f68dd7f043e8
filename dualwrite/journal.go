package dualwrite

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Journal keeps the settle set on durable storage (see The settle set);
// package journal implements it over bbolt. The Store calls Load once,
// from New, and Commit from one goroutine at a time; the Journal belongs
// to the program, which closes it after the Store's Close.
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

// Recorder is an optional ability of a Journal, found by type assertion:
// it keeps a mark from the moment the Store makes it, in memory the
// operating system holds for a file (doc.go, The settle set, says what
// that survives); only a Commit survives a crash of the machine.
//
// The Store calls Record on the caller's path, under the key's ordering
// lock, each time a key enters the settle set or becomes dirty there, and
// Seal from its committer just before it takes the changes it commits:
// every record made before Seal has its change in those changes (or in
// changes already committed), so the Commit that succeeds next may drop
// them. Changes not recorded (a key settling, a record refused) wait for
// the next Commit as they would without a Recorder.
type Recorder interface {
	// Record keeps that key has mark m. It must not block on I/O; it
	// reports false when it cannot keep the record (its space is full
	// until a commit frees it), which the Store counts as a journal error.
	Record(key string, m Mark) bool
	// Seal marks the records made so far as covered by the next Commit.
	Seal()
}

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
	if s.recorder != nil {
		if err := s.seal(); err != nil {
			return s.journalFailed(err)
		}
	}
	changes, reconcile, moved := s.set.take()
	if len(changes) == 0 && !moved {
		return nil
	}
	err := s.journalCommit(ctx, changes, reconcile)
	if err != nil {
		s.set.untake(changes, moved)
		return s.journalFailed(err)
	}
	s.ctr.journalCommits.Add(1)
	s.journalOK.Store(true)
	return nil
}

func (s *Store) journalFailed(err error) error {
	s.ctr.journalErrors.Add(1)
	s.journalOK.Store(false)
	s.warnOnce("dualwrite: the settle journal cannot commit; unsettled keys will not survive a crash until it can",
		slog.String("error", err.Error()))
	return err
}

func (s *Store) seal() (err error) {
	defer journalPanicked(&err)
	s.recorder.Seal()
	return nil
}

// journalPanicked, deferred, turns a panic of the Journal into *err.
func journalPanicked(err *error) {
	if v := recover(); v != nil {
		*err = fmt.Errorf("dualwrite: the journal panicked: %v", v)
	}
}

// record has the Recorder keep key's new mark m, on the caller's path; it
// reports false when the mark waits for the next commit instead.
func (s *Store) record(key string, m Mark) (kept bool) {
	defer func() {
		if recover() != nil {
			kept = false
		}
	}()
	return s.recorder.Record(key, m)
}

func (s *Store) journalCommit(ctx context.Context, changes map[string]Mark, reconcile bool) (err error) {
	defer journalPanicked(&err)
	return s.journal.Commit(ctx, changes, reconcile)
}

// kickCommit wakes the committer without blocking.
func (s *Store) kickCommit() { kick(s.commitKick) }

// kick signals ch, a channel of one slot, without blocking: a signal
// already pending stands for this one.
func kick(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
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
		if s.excludes(k) { // excluded since: the next commit drops it
			s.set.forget(k)
			s.ctr.excluded.journal.Add(1)
			delete(marks, k)
			continue
		}
		s.set.load(k, m, now)
	}
	if s.ctr.excluded.journal.Load() > 0 {
		s.kickCommit()
	}
	if reconcile {
		s.set.mu.Lock()
		s.set.reconcile = true
		s.set.mu.Unlock()
	}
	s.ctr.loaded.Store(uint64(len(marks)))
	return nil
}
