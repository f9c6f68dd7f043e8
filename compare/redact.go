package compare

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// KeyPolicy says how keys appear in logs, spans and reports.
type KeyPolicy string

const (
	// KeyHMAC shows a key as its module and a keyed hash: equal keys look
	// equal within one secret, and nothing of the key can be read back.
	// It is the default.
	KeyHMAC KeyPolicy = "hmac"
	// KeyPlain shows keys as they are, for engineers who must find them.
	KeyPlain KeyPolicy = "plain"
	// KeyHidden shows only the module.
	KeyHidden KeyPolicy = "hidden"
)

// ParseKeyPolicy reads a policy name; "" means KeyHMAC.
func ParseKeyPolicy(s string) (KeyPolicy, error) {
	switch p := KeyPolicy(strings.ToLower(s)); p {
	case "":
		return KeyHMAC, nil
	case KeyHMAC, KeyPlain, KeyHidden:
		return p, nil
	}
	return "", fmt.Errorf("compare: unknown key policy %q (want hmac, plain or hidden)", s)
}

// Redactor turns keys and values into what may be recorded.
type Redactor struct {
	policy KeyPolicy
	secret []byte
}

// NewRedactor returns a Redactor with policy and secret. An empty secret
// draws a random one for this process: hashes then correlate within a run
// only. Give the same secret to every process whose records must correlate.
func NewRedactor(policy KeyPolicy, secret []byte) (*Redactor, error) {
	p, err := ParseKeyPolicy(string(policy))
	if err != nil {
		return nil, err
	}
	if len(secret) == 0 {
		secret = make([]byte, 32)
		_, _ = rand.Read(secret) // crypto/rand.Read never fails (Go 1.24+)
	}
	return &Redactor{policy: p, secret: append([]byte(nil), secret...)}, nil
}

// Policy returns the key policy.
func (r *Redactor) Policy() KeyPolicy { return r.policy }

// Key returns key as the policy allows: "wordle:#3f2a9c0d1b7e4a55" under
// KeyHMAC, the key itself under KeyPlain, "wordle:#" under KeyHidden. The
// module stays readable because reports and dashboards group by it.
func (r *Redactor) Key(key string) string {
	if r.policy == KeyPlain {
		return key
	}
	mod := kv.ModuleOf(key)
	if mod != "" {
		mod += ":"
	}
	if r.policy == KeyHidden {
		return mod + "#"
	}
	return mod + "#" + r.sum("key", []byte(key))
}

func (r *Redactor) sum(domain string, b []byte) string {
	m := hmac.New(sha256.New, r.secret)
	m.Write([]byte(domain))
	m.Write([]byte{0})
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// Digest is what a record keeps of a value: whether it was there, its
// length, a keyed hash prefix, and its expiry. Never the value.
type Digest struct {
	Present    bool      `json:"present"`
	Length     int       `json:"length,omitempty"`
	Hash       string    `json:"hash,omitempty"`
	Expiration time.Time `json:"expiration,omitzero"`
	// Metadata is a keyed hash prefix of the key's metadata, empty when it
	// has none.
	Metadata string `json:"metadata,omitempty"`
}

// Digest summarises an observation.
func (r *Redactor) Digest(o Observation) Digest {
	if o.Err != nil || !o.Found {
		return Digest{}
	}
	d := Digest{Present: true, Length: len(o.Value), Hash: r.sum("value", o.Value), Expiration: o.Expiration}
	if o.Metadata != nil {
		d.Metadata = r.sum("metadata", o.Metadata)
	}
	return d
}

// Record is one classified key, safe to log, export and print.
type Record struct {
	Namespace string    `json:"namespace"`
	Key       string    `json:"key"`
	Kind      Kind      `json:"kind"`
	Primary   Digest    `json:"primary"`
	Shadow    Digest    `json:"shadow"`
	Error     string    `json:"error,omitempty"`
	At        time.Time `json:"at,omitzero"`
}

// Record builds the redacted record of a classification. The error text is
// reduced to its class (unavailable, not found, timeout...) because backend
// messages can quote keys.
func (r *Redactor) Record(key string, kind Kind, primary, shadow Observation, at time.Time) Record {
	rec := Record{
		Namespace: kv.ModuleOf(key),
		Key:       r.Key(key),
		Kind:      kind,
		Primary:   r.Digest(primary),
		Shadow:    r.Digest(shadow),
		At:        at,
	}
	switch {
	case primary.Err != nil:
		rec.Error = "primary: " + ErrorClass(primary.Err)
	case shadow.Err != nil:
		rec.Error = "shadow: " + ErrorClass(shadow.Err)
	}
	return rec
}
