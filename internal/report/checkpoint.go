package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/internal/atomicfile"
)

// checkpointVersion changes whenever the file's meaning does; an older file
// is refused rather than misread.
const checkpointVersion = 1

// checkpoint is what a run saves to resume: its position and everything it
// has committed. It holds raw keys (the position), so it is written 0600.
type checkpoint struct {
	Version     int         `json:"version"`
	Fingerprint string      `json:"fingerprint"`
	Secret      []byte      `json:"secret,omitempty"`
	StartedAt   time.Time   `json:"started_at"`
	SavedAt     time.Time   `json:"saved_at"`
	Requests    [2]Requests `json:"requests"`
	committed
}

// fingerprint identifies what a run computes, so that a checkpoint is only
// resumed by a run that would compute the same: the stores, the scope and
// the comparison, not the tuning (batch size, concurrency, budgets).
func fingerprint(c Config, ranges []string) string {
	var secret string
	if len(c.Secret) > 0 {
		sum := sha256.Sum256(append([]byte("kvshadow report secret\x00"), c.Secret...))
		secret = hex.EncodeToString(sum[:])
	}
	var keys string
	if c.Scope.KeyList > 0 {
		h := sha256.New()
		for _, k := range c.Scope.Keys {
			h.Write([]byte(k))
			h.Write([]byte{0})
		}
		keys = hex.EncodeToString(h.Sum(nil))
	}
	doc, _ := json.Marshal(struct {
		Version                int
		Keys                   string
		Identity               string
		Primary, Shadow        string
		Ranges                 []string
		Scope                  Scope
		TTL                    time.Duration
		Policy                 compare.KeyPolicy
		Secret                 string
		Repair, Apply          bool
		Authoritative          Role
		MaxRecords, MaxModules int
	}{
		checkpointVersion, keys, c.Identity, c.Primary.Name, c.Shadow.Name, ranges, c.Scope,
		c.TTLTolerance, c.KeyPolicy, secret, c.Repair.Enabled, c.Repair.Apply,
		c.Repair.Authoritative, c.MaxRecords, c.MaxModules,
	})
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:])
}

// resume loads the checkpoint, when one exists, into e.
func (e *engine) resume() error {
	path := e.cfg.Checkpoint
	if path == "" {
		return nil
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: reading %s: %w", ErrCheckpoint, path, err)
	}
	var cp checkpoint
	if err := json.Unmarshal(raw, &cp); err != nil {
		return fmt.Errorf("%w: %s is not a checkpoint: %w", ErrCheckpoint, path, err)
	}
	switch {
	case cp.Version != checkpointVersion:
		return fmt.Errorf("%w: %s has version %d, this program writes %d; remove it to start over", ErrCheckpoint, path, cp.Version, checkpointVersion)
	case cp.Fingerprint != e.fingerprint:
		return fmt.Errorf("%w: %s was made with other stores, scope or options; rerun with those, or remove it to start over", ErrCheckpoint, path)
	case cp.Position.Range < 0 || cp.Position.Range > len(e.ranges):
		return fmt.Errorf("%w: %s holds a position outside the scan", ErrCheckpoint, path)
	}
	e.resumed = true
	e.secret = cp.Secret
	e.startedAt = cp.StartedAt
	e.committed, e.baseline = cp.committed, cp.Scanned
	if e.Modules == nil { // counts with no kinds are filled as they are added to
		e.Modules = make(map[string]*Counts)
	}
	e.priorRequests = cp.Requests
	e.notice("resuming from checkpoint %s: %d keys done, saved %s", path, cp.Scanned, cp.SavedAt.UTC().Format(time.RFC3339))
	return nil
}

// maybeSave writes the checkpoint when one is configured and CheckpointEvery
// has passed since the last write, or always when force is set.
func (e *engine) maybeSave(force bool) error {
	if e.cfg.Checkpoint == "" {
		return nil
	}
	now := e.cfg.Clock.Now()
	if !force && now.Sub(e.lastCheckpoint) < e.cfg.CheckpointEvery {
		return nil
	}
	e.mu.Lock()
	cp := checkpoint{
		Version: checkpointVersion, Fingerprint: e.fingerprint, Secret: e.secret,
		StartedAt: e.startedAt, SavedAt: now, Requests: e.requests(), committed: e.committed,
	}
	raw, err := json.Marshal(cp)
	e.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: encoding: %w", ErrCheckpoint, err)
	}
	if err := atomicfile.Write(e.cfg.Checkpoint, raw, 0o600); err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	e.lastCheckpoint = now
	return nil
}

// requests is the requests of every run so far, this one included.
func (e *engine) requests() [2]Requests {
	out := e.priorRequests
	out[0].add(e.primary.requests())
	out[1].add(e.shadow.requests())
	return out
}

// removeCheckpoint deletes the checkpoint of a completed run: a new run
// starts over rather than resuming a finished scan.
func removeCheckpoint(path string) error {
	if path == "" {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: removing %s: %w", ErrCheckpoint, path, err)
	}
	return nil
}
