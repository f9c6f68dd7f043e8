package kvapi

import (
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"

	"github.com/kvshadow/kvshadow/kv"
)

// readPutBody reads a value sent raw or as multipart/form-data; form holds
// the multipart's other text fields.
func readPutBody(r *http.Request) (value []byte, md json.RawMessage, form map[string]string, e *apiError) {
	mediaType, params := putMediaType(r)
	if mediaType != "multipart/form-data" {
		value, e := readDeclared(r, kv.MaxValueSize)
		return value, nil, nil, e
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	form = map[string]string{}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if e := readError(err); e.status == http.StatusRequestEntityTooLarge || e.status == http.StatusServiceUnavailable {
				return nil, nil, nil, e
			}
			return nil, nil, nil, errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: malformed multipart body")
		}
		switch name := part.FormName(); name {
		case "value":
			if value, e = readLimited(part, kv.MaxValueSize); e != nil {
				return nil, nil, nil, e
			}
		case "metadata":
			// Read past the limit so that the refusal counts the bytes
			// the same way as on the other paths.
			raw, e := readLimited(part, 2*kv.MaxMetadataSize)
			if e != nil {
				return nil, nil, nil, errorf(http.StatusRequestEntityTooLarge, CodeMetadata, "invalid metadata: more than %d bytes, the limit is %d", 2*kv.MaxMetadataSize, kv.MaxMetadataSize)
			}
			if md, e = checkMetadata(raw); e != nil {
				return nil, nil, nil, e
			}
		case "expiration", "expiration_ttl":
			raw, e := readLimited(part, 64)
			if e != nil {
				return nil, nil, nil, errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: %s too long", name)
			}
			form[name] = string(raw)
		}
	}
	if value == nil {
		value = []byte{}
	}
	return value, md, form, nil
}
