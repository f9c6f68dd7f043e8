package cfkv

import (
	"encoding/json"
	"strings"
)

// successOf reads a write's envelope as json.Unmarshal into
// struct{ Success *bool `json:"success"` } does, without the seven
// allocations that costs a write's answer: the body is checked by
// json.Valid, which allocates nothing, then its top-level members are
// walked. found is false where that decoding would fail or leave Success
// nil. A member name with an escape or a byte past ASCII, which
// encoding/json folds by Unicode's rules, is left to encoding/json.
func successOf(body []byte) (success, found bool) {
	if !json.Valid(body) {
		return false, false
	}
	i := skipSpace(body, 0)
	if body[i] != '{' {
		return false, false // null leaves Success nil; any other value is a type error
	}
	i = skipSpace(body, i+1)
	if body[i] == '}' {
		return false, false
	}
	for {
		end := i + 1 // body[i] is the name's opening quote
		for ; body[end] != '"'; end++ {
			if body[end] == '\\' || body[end] >= 0x80 {
				return successDecoded(body)
			}
		}
		name := string(body[i+1 : end]) // not allocated: compared only
		i = skipSpace(body, skipSpace(body, end+1)+1)
		next := skipValue(body, i)
		if strings.EqualFold(name, "success") {
			switch string(body[i:next]) {
			case "true":
				success, found = true, true
			case "false":
				success, found = false, true
			case "null":
				success, found = false, false
			default:
				return false, false // a type error, whatever follows
			}
		}
		i = skipSpace(body, next)
		if body[i] == '}' {
			return success, found
		}
		i = skipSpace(body, i+1) // past the comma
	}
}

// successDecoded is successOf by encoding/json.
func successDecoded(body []byte) (success, found bool) {
	var env struct {
		Success *bool `json:"success"`
	}
	if json.Unmarshal(body, &env) != nil || env.Success == nil {
		return false, false
	}
	return *env.Success, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns where the valid JSON value at b[i] ends.
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of the enclosing object
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}
