package mongokv

// Document sizes, from the BSON layout (bsonspec.org): a document is an
// int32 length, its elements and a NUL; an element is a type byte, its name
// as a NUL-terminated string, and its value. A string value is an int32
// length, the bytes and a NUL; a binary value is an int32 length, a subtype
// byte and the bytes; a date is 8 bytes. A string and a binary of n bytes
// thus take the same n+5 bytes, and a value's encoding never changes whether
// it fits.
const (
	// MaxDocumentSize is MongoDB's limit on a stored document (its
	// BSONObjMaxUserSize), which inserts and updates are checked against.
	MaxDocumentSize = 16 << 20
	// MinDocumentSize is the least Config.MaxDocumentSize: room for the
	// longest key, the largest metadata and an expiry, and few enough
	// chunks for the largest value.
	MinDocumentSize = 4 << 10

	docFraming   = 4 + 1                      // the length and the final NUL
	idElement    = 1 + len("_id\x00") + 4 + 1 // + the key's bytes
	valueElement = 1 + len("value\x00") + 4 + 1
	expElement   = 1 + len("expiresAt\x00") + 8
	mdElement    = 1 + len("metadata\x00") + 4 + 1 // + the metadata's bytes

	// keyDocOverhead is what a key's document { _id, value } takes beside
	// the key's and the value's bytes: 27.
	keyDocOverhead = docFraming + idElement + valueElement

	// chunkIDLen is the length of a chunk's _id: a generation (an ObjectID
	// in hex), ":" and five digits.
	chunkIDLen = 24 + 1 + 5
	// chunkDocOverhead is what a chunk { _id, data, expiresAt } takes beside
	// its data: 75.
	chunkDocOverhead = docFraming + idElement + chunkIDLen + 1 + len("data\x00") + 4 + 1 + expElement
)

// InlineLimit is the longest value that a document of at most maxDoc bytes
// holds inline for key, with an expiry when hasExpiry and with metadata md
// (nil: none). It is negative when not even an empty value fits.
func InlineLimit(maxDoc int, key string, hasExpiry bool, md []byte) int {
	n := maxDoc - keyDocOverhead - len(key)
	if hasExpiry {
		n -= expElement
	}
	if md != nil {
		n -= mdElement + len(md)
	}
	return n
}

// chunkDataSize is the most data one chunk of a document limit holds.
func chunkDataSize(maxDoc int) int { return maxDoc - chunkDocOverhead }
