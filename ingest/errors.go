package ingest

import "errors"

// The errors of this package, checked with errors.Is.
var (
	// ErrConfig: New was given a Config it cannot use.
	ErrConfig = errors.New("ingest: invalid config")
	// ErrInvalidBatch: a batch broke a rule of the wire format; nothing
	// of it was handed on.
	ErrInvalidBatch = errors.New("ingest: invalid batch")
	// ErrKeyEncoding: a key of a batch is not valid UTF-8 (raw bytes, or a
	// lone surrogate escape); it matches ErrInvalidBatch and
	// kv.ErrInvalidKey too. The handler answers 400 invalid_key.
	ErrKeyEncoding = errors.New("ingest: key is not valid UTF-8")
	// ErrTooLarge: a batch is over one of the Config's caps.
	ErrTooLarge = errors.New("ingest: batch too large")
	// ErrUnknownNamespace: a Sink or StageReader does not serve the
	// namespace named. The handler answers 404.
	ErrUnknownNamespace = errors.New("ingest: unknown namespace")
	// ErrStage: the Sink's stage takes no tee copies (the shadow is not
	// written) or reads (the primary is not authoritative either). A Sink
	// wraps its own error with it; the handler answers 409 so that the tee
	// reads the stage again.
	ErrStage = errors.New("ingest: the stage takes no tee copies")
)
