package kv

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// UnquoteKey decodes a key given as a JSON string, raw as encoding/json
// hands it to an UnmarshalJSON method. valid is false when raw is not valid
// UTF-8, as raw bytes or as an escaped lone surrogate: encoding/json would
// decode either to U+FFFD, which would make different keys one. err is
// encoding/json's, for a value that is no string.
func UnquoteKey(raw []byte) (key string, valid bool, err error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		// No escape: the literal is the key, one allocation.
		return string(raw[1 : len(raw)-1]), utf8.Valid(raw), nil
	}
	if err := json.Unmarshal(raw, &key); err != nil {
		return "", false, err
	}
	// key is valid UTF-8 (encoding/json replaces what is not), so each
	// U+FFFD in it is one rune.
	return key, utf8.Valid(raw) && spelledReplacements(raw) == strings.Count(key, "\uFFFD"), nil
}

// spelledReplacements counts the U+FFFD the raw JSON string spells itself,
// as UTF-8 or as an escape; any other U+FFFD after decoding stands for an
// invalid byte or a lone surrogate.
func spelledReplacements(raw []byte) int {
	n := bytes.Count(raw, []byte("\uFFFD"))
	for i := 0; i+6 <= len(raw); i++ {
		if raw[i] == '\\' {
			if bytes.EqualFold(raw[i:i+6], []byte(`\ufffd`)) {
				n++
			}
			i++ // skip the escaped character, so that `\\ufffd` is text
		}
	}
	return n
}
