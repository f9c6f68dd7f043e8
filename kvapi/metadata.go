package kvapi

import (
	"encoding/json"
	"net/http"

	"github.com/kvshadow/kvshadow/kv"
)

// checkMetadata applies Workers KV's metadata rules to what a write sent,
// the same on every path: one JSON value, at most kv.MaxMetadataSize bytes
// once compacted (HTTP 413 beyond, as Cloudflare's own simulator answers),
// code CodeMetadata. It returns the compacted metadata, nil for none: JSON
// null and an absent field both mean none.
func checkMetadata(raw []byte) (json.RawMessage, *apiError) {
	if raw == nil {
		return nil, nil
	}
	if !json.Valid(raw) {
		return nil, errorf(http.StatusBadRequest, CodeMetadata, "invalid metadata: not one JSON value")
	}
	if err := kv.ValidateMetadata(raw); err != nil {
		return nil, errorf(http.StatusRequestEntityTooLarge, CodeMetadata, "invalid metadata: %d bytes, the limit is %d", len(kv.NormalizeMetadata(raw)), kv.MaxMetadataSize)
	}
	return kv.NormalizeMetadata(raw), nil
}

// refuseMetadata refuses, before anything is written, entries with
// metadata for a store that would drop it.
func refuseMetadata(store kv.Store, entries ...kv.Entry) *apiError {
	if _, ok := store.(kv.MetadataStore); ok {
		return nil
	}
	for _, e := range entries {
		if e.Metadata != nil {
			return metadataUnsupported()
		}
	}
	return nil
}

func metadataUnsupported() *apiError {
	return errorf(http.StatusBadRequest, CodeMetadata, "invalid metadata: this namespace's store keeps no metadata")
}

// metadataResult is how a read reports metadata: the JSON value, or null.
func metadataResult(md json.RawMessage) any {
	if md == nil {
		return nil
	}
	return md
}
