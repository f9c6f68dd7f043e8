package cli

import (
	"bufio"
	"errors"
	"os"

	"github.com/kvshadow/kvshadow/kv"
)

// readKeyList reads --keys-file: one key a line, exactly as stored (spaces
// are part of a key; a trailing CR is not), blank lines skipped. A bad line
// is a usage error that names its number, not its text.
func readKeyList(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usage("--keys-file: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1024), 4*kv.MaxKeySize)
	var keys []string
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if l := len(line); l > 0 && line[l-1] == '\r' {
			line = line[:l-1]
		}
		if line == "" {
			continue
		}
		if err := kv.ValidateKey(line); err != nil {
			return nil, usage("--keys-file %s, line %d: %v", path, n, err)
		}
		keys = append(keys, line)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, usage("--keys-file %s: a line is longer than a key may be (%d bytes)", path, kv.MaxKeySize)
		}
		return nil, usage("--keys-file %s: %v", path, err)
	}
	if len(keys) == 0 {
		return nil, usage("--keys-file %s holds no key (leave the flag out to scan every key)", path)
	}
	return keys, nil
}
