package dualwrite

import (
	"context"
	"errors"
	"fmt"

	"github.com/kvshadow/kvshadow/kv"
)

// The errors of the Store's own making. Store operations otherwise return
// the authoritative store's errors unchanged.
var (
	// ErrInvalidConfig: New refused the Config, or ParseStage the name.
	ErrInvalidConfig = errors.New("dualwrite: invalid configuration")
	// ErrStageTransition: the stage machine (CheckTransition) refused a
	// change that is not one step along Stages, or that leaves Complete;
	// the message names the next allowed steps.
	ErrStageTransition = errors.New("dualwrite: stage transition not allowed")
	// ErrUnsynced: SetStage refused to change which store is authoritative
	// while the fence holds it (the message says what: dirty keys, an
	// overflowed set, the handover's conditions). Repair, or reconcile and
	// call AcknowledgeReconciliation (AcknowledgeReconciliationAt, or
	// kvshadow-proxy's POST /reconciliation), then try again.
	ErrUnsynced = errors.New("dualwrite: the other store is not in sync")
	// ErrIngestStage: Ingest was called in off, where the shadow is not
	// written, or CompareReads in a stage where the primary is not
	// authoritative or the shadow is not written (off, live, rampdown,
	// complete): a tee read has nothing to be compared with there. (From
	// live on, Ingest takes late copies.)
	ErrIngestStage = errors.New("dualwrite: the stage takes no ingested writes")
	// ErrInvalidRead: CompareReads was given a read it cannot compare (no
	// time, a digest on a read that found nothing, a length out of
	// range); none of the call's reads was compared.
	ErrInvalidRead = errors.New("dualwrite: invalid tee read")
)

// errClosed is what every call returns after Close.
var errClosed = fmt.Errorf("dualwrite: %w", kv.ErrClosed)

// errTimeout is the cause of an asynchronous operation cut off by
// ShadowTimeout; compare.ErrorClass calls it "timeout".
var errTimeout = fmt.Errorf("dualwrite: shadow operation timed out: %w", context.DeadlineExceeded)

// errAborted is the cause of the operations Close cancels when its context
// ends before the lanes are drained.
var errAborted = fmt.Errorf("dualwrite: operation abandoned at close: %w", kv.ErrClosed)

// errNoMetadata refuses an entry with metadata when a store of the pair
// keeps none: the copy would lose it.
var errNoMetadata = fmt.Errorf("dualwrite: a store of the pair keeps no metadata: %w", kv.ErrMetadataUnsupported)
