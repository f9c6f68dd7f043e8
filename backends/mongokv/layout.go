package mongokv

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kvshadow/kvshadow/kv"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Names of the database and the collections that are not a module's. The
// collection names hold a ".", which no module's collection can, so none can
// be mistaken for one.
const (
	// DefaultDatabase is used when neither Config nor the URI names one:
	// the JavaScript bot's own database.
	DefaultDatabase = "miti99bot"
	// DefaultCollection holds the keys that have no module prefix.
	DefaultCollection = "kvshadow.default"
	// ChunkCollection holds the pieces of values too large for one
	// document.
	ChunkCollection = "kvshadow.chunks"
	// GenerationCollection holds one small document per chunked value
	// (its generation): the owner key and the number of chunks, which the
	// sweep uses to find chunks that no document references.
	GenerationCollection = "kvshadow.chunkgens"
)

// The fields of a key's document.
const (
	fieldID       = "_id"
	fieldValue    = "value"
	fieldExpires  = "expiresAt"
	fieldChunks   = "chunks"
	fieldMetadata = "metadata"
)

// isModuleByte reports the bytes of ^[a-z0-9_-]+$.
func isModuleByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func isModule(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isModuleByte(s[i]) {
			return false
		}
	}
	return true
}

// collectionOf names the collection that holds key.
func collectionOf(key string) string {
	if i := strings.IndexByte(key, ':'); i > 0 && isModule(key[:i]) {
		return strings.ReplaceAll(key[:i], "-", "_")
	}
	return DefaultCollection
}

// isModuleCollection reports names that collectionOf gives a module.
func isModuleCollection(name string) bool {
	return isModule(name) && !strings.Contains(name, "-")
}

// CheckDatabase applies MongoDB's rules for database names, before any I/O:
// what a program checks its settings with.
func CheckDatabase(name string) error {
	switch {
	case name == "":
		return errors.New("database name is empty")
	case len(name) > 63:
		return fmt.Errorf("database name is %d bytes, the limit is 63", len(name))
	case strings.ContainsAny(name, "/\\. \"$\x00"):
		return errors.New(`database name holds one of / \ . space " $ or NUL`)
	}
	return nil
}

// encodeValue stores text as a BSON string, as the bot's readers expect, and
// any other bytes as BSON binary.
func encodeValue(v []byte) any {
	if utf8.Valid(v) {
		return string(v)
	}
	return bson.Binary{Subtype: bson.TypeBinaryGeneric, Data: v}
}

// notExpired is the read-time expiry filter of queries that scan (see the
// package doc's Expiry); point reads check doc.expired instead.
func notExpired(now time.Time) bson.E {
	return bson.E{Key: fieldExpires, Value: bson.D{{Key: "$not", Value: bson.D{{Key: "$lte", Value: now}}}}}
}

// infoProjection brings what a listing or a metadata read returns: never
// the value nor a chunk reference (the key's document has the rest).
var infoProjection = bson.D{{Key: fieldID, Value: 1}, {Key: fieldExpires, Value: 1}, {Key: fieldMetadata, Value: 1}}

// hasChunks matches documents whose value lives in ChunkCollection.
var hasChunks = bson.E{Key: fieldChunks, Value: bson.D{{Key: "$exists", Value: true}}}

// byID is the filter of every single-key write and point read: the bare _id,
// the only filter FerretDB pushes down (see the package doc's Round trips).
func byID(key string) bson.D { return bson.D{{Key: fieldID, Value: key}} }

// guardedUpdate is the update of a Put whose value fits in the document. Its
// $pop of the chunks field is the guard of the package doc's Round trips, not
// a change; the refused key goes through replaceUpdate.
func guardedUpdate(value []byte, exp time.Time, md json.RawMessage) bson.D {
	u := setFields(bson.D{{Key: fieldValue, Value: encodeValue(value)}}, nil, exp, md)
	return append(u, bson.E{Key: "$pop", Value: bson.D{{Key: fieldChunks, Value: 1}}})
}

// replaceUpdate is guardedUpdate for a document that may hold a chunk
// reference: it removes it.
func replaceUpdate(value []byte, exp time.Time, md json.RawMessage) bson.D {
	return setFields(bson.D{{Key: fieldValue, Value: encodeValue(value)}}, []string{fieldChunks}, exp, md)
}

// setFields is the update that sets set, the expiry and the metadata, and
// removes unset and whichever of the expiry and the metadata there is none
// of. The metadata is kept as the JSON text, a string, as value is: the
// exact bytes, with none of the limits of BSON field names.
func setFields(set bson.D, unset []string, exp time.Time, md json.RawMessage) bson.D {
	md = kv.NormalizeMetadata(md)
	if exp.IsZero() {
		unset = append(unset, fieldExpires)
	} else {
		set = append(set, bson.E{Key: fieldExpires, Value: exp})
	}
	if md == nil {
		unset = append(unset, fieldMetadata)
	} else {
		set = append(set, bson.E{Key: fieldMetadata, Value: string(md)})
	}
	u := bson.D{{Key: "$set", Value: set}}
	if len(unset) > 0 {
		fields := make(bson.D, len(unset))
		for i, f := range unset {
			fields[i] = bson.E{Key: f, Value: ""}
		}
		u = append(u, bson.E{Key: "$unset", Value: fields})
	}
	return u
}

// Codes of write refusals that send a write down a slower path.
const (
	codeTypeMismatch = 14 // the guard of guardedUpdate met a chunk reference
)

// isDuplicateKeyCode reports the codes mongo.IsDuplicateKeyError knows, for
// the per-write errors of a bulk write.
func isDuplicateKeyCode(code int) bool { return code == 11000 || code == 11001 || code == 12582 }

// refusedByGuard reports the error of a guardedUpdate that met chunks.
func refusedByGuard(err error) bool {
	var se mongo.ServerError
	return errors.As(err, &se) && se.HasErrorCode(codeTypeMismatch)
}

type doc struct {
	key    string
	value  []byte
	exp    time.Time
	md     json.RawMessage // nil: none
	chunks *chunkRef       // non-nil when the value is chunked
}

func (d doc) entry() kv.Entry {
	return kv.Entry{Key: d.key, Value: d.value, Expiration: d.exp, Metadata: d.md}
}

// expired applies the read-time expiry filter to a document read by _id.
func (d doc) expired(now time.Time) bool { return !d.exp.IsZero() && !d.exp.After(now) }

var errBadDocument = errors.New("mongokv: stored document has an unexpected shape")

// decodeInfo reads the key, expiry and metadata of a key's document, which
// is all that a listing's projection brings.
func decodeInfo(raw bson.Raw) (doc, error) {
	var d doc
	id, ok := raw.Lookup(fieldID).StringValueOK()
	if !ok {
		return d, errBadDocument
	}
	d.key = id
	if t, ok := raw.Lookup(fieldExpires).TimeOK(); ok {
		d.exp = t.UTC()
	}
	if m := raw.Lookup(fieldMetadata); m.Type != 0 {
		text, ok := m.StringValueOK()
		if !ok || !json.Valid([]byte(text)) {
			return d, errBadDocument
		}
		d.md = json.RawMessage(text)
	}
	return d, nil
}

// decodeDoc reads a key's document without reflection.
func decodeDoc(raw bson.Raw) (doc, error) {
	d, err := decodeInfo(raw)
	if err != nil {
		return d, err
	}
	v := raw.Lookup(fieldValue)
	switch v.Type {
	case bson.TypeString:
		// A BSON string is int32 length, bytes, NUL.
		if len(v.Value) < 5 {
			return d, errBadDocument
		}
		d.value = append(make([]byte, 0, len(v.Value)-5), v.Value[4:len(v.Value)-1]...)
		return d, nil
	case bson.TypeBinary:
		_, data, ok := v.BinaryOK()
		if !ok {
			return d, errBadDocument
		}
		d.value = append(make([]byte, 0, len(data)), data...)
		return d, nil
	}
	ref, err := decodeChunkRef(raw.Lookup(fieldChunks))
	if err != nil {
		return d, err
	}
	d.chunks = ref
	return d, nil
}
