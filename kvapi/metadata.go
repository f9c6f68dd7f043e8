package kvapi

import (
	"encoding/json"
	"net/http"

	"github.com/kvshadow/kvshadow/kv"
)

// checkMetadata applies the metadata rule of the package doc (413 past the
// size, as Cloudflare's own simulator answers). It returns the compacted
// metadata, nil for none.
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

func metadataResult(md json.RawMessage) any {
	if md == nil {
		return nil
	}
	return md
}
