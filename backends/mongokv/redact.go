package mongokv

import (
	"net/url"
	"slices"
	"strings"
)

// redactor removes a URI's secrets from text that came from the driver. The
// driver's messages can quote the URI's options and hosts; the credentials
// must never reach an error or a log.
type redactor struct {
	secrets []string // longest first, so that a secret containing another is removed whole
}

const redacted = "[redacted]"

// newRedactor collects the secrets of uri: the URI itself, its user
// information and password in raw and unescaped forms, and the values of
// options that carry secrets. It parses leniently, since a URI the driver
// refuses must be redacted too.
func newRedactor(uri string) *redactor {
	r := &redactor{}
	add := func(s string) {
		if s == "" {
			return
		}
		r.secrets = append(r.secrets, s)
		if u, err := url.PathUnescape(s); err == nil && u != s {
			r.secrets = append(r.secrets, u)
		}
		if u, err := url.QueryUnescape(s); err == nil && u != s {
			r.secrets = append(r.secrets, u)
		}
	}
	add(uri)
	if _, rest, ok := strings.Cut(uri, "://"); ok {
		// A malformed URI may hold several "@": every reading of the
		// user information is redacted.
		for _, at := range []int{strings.Index(rest, "@"), strings.LastIndex(rest, "@")} {
			if at < 0 {
				continue
			}
			userinfo := rest[:at]
			add(userinfo)
			if _, pass, ok := strings.Cut(userinfo, ":"); ok {
				add(pass)
			}
		}
		if _, query, ok := strings.Cut(rest, "?"); ok {
			for _, kv := range strings.FieldsFunc(query, func(r rune) bool { return r == '&' || r == ';' }) {
				k, v, _ := strings.Cut(kv, "=")
				if !sensitiveOption(k) {
					continue
				}
				add(v)
				// authMechanismProperties is "NAME:value,NAME:value".
				for _, prop := range strings.Split(v, ",") {
					if _, pv, ok := strings.Cut(prop, ":"); ok {
						add(pv)
					}
				}
			}
		}
	}
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	return r
}

// sensitiveOption reports URI options whose values are secrets.
func sensitiveOption(key string) bool {
	k := strings.ToLower(key)
	return strings.Contains(k, "password") || strings.Contains(k, "secret") ||
		strings.Contains(k, "token") || k == "authmechanismproperties"
}

func (r *redactor) redact(s string) string {
	for _, secret := range r.secrets {
		if strings.Contains(s, secret) {
			s = strings.ReplaceAll(s, secret, redacted)
		}
	}
	return s
}
