package kv

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
)

// ValidateModule checks a module (namespace) name against ^[a-z0-9_-]+$.
// The rule keeps ":" out of names, so no module can reach into another's keys.
func ValidateModule(module string) error {
	ok := module != ""
	for i := 0; i < len(module) && ok; i++ {
		c := module[i]
		ok = 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-'
	}
	if !ok {
		return fmt.Errorf("%w: module name %q must match ^[a-z0-9_-]+$", ErrInvalidNamespace, module)
	}
	return nil
}

// Namespaced is a module's view of a Store: every key is stored as
// "<module>:<key>", and listed keys come back without that prefix.
type Namespaced struct {
	inner  Store
	module string
	prefix string
}

var _ Store = (*Namespaced)(nil)

// Namespace returns module's view of s.
func Namespace(s Store, module string) (*Namespaced, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalidNamespace)
	}
	if err := ValidateModule(module); err != nil {
		return nil, err
	}
	return &Namespaced{inner: s, module: module, prefix: module + ":"}, nil
}

// Module returns the namespace's module name.
func (n *Namespaced) Module() string { return n.module }

// key prefixes key and checks the result, so that a key that is valid alone
// but too long once prefixed is refused with the contract's error.
func (n *Namespaced) key(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	full := n.prefix + key
	if len(full) > MaxKeySize {
		return "", fmt.Errorf("%w: key is %d bytes with its namespace prefix %q, the limit is %d",
			ErrInvalidKey, len(full), n.prefix, MaxKeySize)
	}
	return full, nil
}

// Get implements Store.
func (n *Namespaced) Get(ctx context.Context, key string) ([]byte, error) {
	full, err := n.key(key)
	if err != nil {
		return nil, err
	}
	return n.inner.Get(ctx, full)
}

// Put implements Store.
func (n *Namespaced) Put(ctx context.Context, key string, value []byte, opts PutOptions) error {
	full, err := n.key(key)
	if err != nil {
		return err
	}
	return n.inner.Put(ctx, full, value, opts)
}

// Delete implements Store.
func (n *Namespaced) Delete(ctx context.Context, key string) error {
	full, err := n.key(key)
	if err != nil {
		return err
	}
	return n.inner.Delete(ctx, full)
}

// List implements Store. The cursor it returns is bound to this namespace and
// prefix; a cursor from another namespace or prefix, or a forged one, is
// refused with ErrInvalidCursor before the inner store sees it.
func (n *Namespaced) List(ctx context.Context, opts ListOptions) (ListResult, error) {
	if _, err := ValidateListOptions(opts); err != nil {
		return ListResult{}, err
	}
	inner, err := n.openCursor(opts.Cursor, opts.Prefix)
	if err != nil {
		return ListResult{}, err
	}
	res, err := n.inner.List(ctx, ListOptions{Prefix: n.prefix + opts.Prefix, Limit: opts.Limit, Cursor: inner})
	if err != nil {
		return ListResult{}, err
	}
	keys := make([]string, 0, len(res.Keys))
	for _, k := range res.Keys {
		rel, ok := strings.CutPrefix(k, n.prefix)
		if !ok {
			return ListResult{}, fmt.Errorf("kv: namespace %q: store listed a key outside the namespace", n.module)
		}
		keys = append(keys, rel)
	}
	out := ListResult{Keys: keys, Done: res.Done, Info: res.Info}
	if !res.Done {
		out.Cursor = n.sealCursor(res.Cursor, opts.Prefix)
	}
	return out, nil
}

// A namespaced cursor is "n1." + base64url(module NUL prefix NUL inner).
const nsCursorTag = "n1."

func (n *Namespaced) sealCursor(inner, prefix string) string {
	return nsCursorTag + base64.RawURLEncoding.EncodeToString([]byte(n.module+"\x00"+prefix+"\x00"+inner))
}

func (n *Namespaced) openCursor(cursor, prefix string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	enc, ok := strings.CutPrefix(cursor, nsCursorTag)
	if !ok {
		return "", fmt.Errorf("%w: not issued by a namespaced store", ErrInvalidCursor)
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return "", fmt.Errorf("%w: malformed", ErrInvalidCursor)
	}
	parts := strings.SplitN(string(raw), "\x00", 3)
	switch {
	case len(parts) != 3:
		return "", fmt.Errorf("%w: malformed", ErrInvalidCursor)
	case parts[0] != n.module:
		return "", fmt.Errorf("%w: issued for another namespace", ErrInvalidCursor)
	case parts[1] != prefix:
		return "", fmt.Errorf("%w: issued for another prefix", ErrInvalidCursor)
	case parts[2] == "":
		return "", fmt.Errorf("%w: malformed", ErrInvalidCursor)
	}
	return parts[2], nil
}
