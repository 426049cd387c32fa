package configs

import (
	"fmt"
	"net/url"
	"os"
	"strings"
)

// Secret is a string that never shows itself: fmt, JSON, text marshalling (and so zap) print
// "<redacted>". Reveal is the one way to read it, which makes every use easy to find.
type Secret string

const redacted = "<redacted>"

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString keeps %#v from printing the value.
func (s Secret) GoString() string { return fmt.Sprintf("configs.Secret(%q)", s.String()) }

// MarshalText implements encoding.TextMarshaler (and so JSON and YAML encoding).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// ResolvePassword returns the password from Password or, when PasswordFile is set, from that file
// with surrounding white space (a trailing newline from an editor or `echo`) removed.
func (b *Broker) ResolvePassword() (string, error) {
	if b.PasswordFile == "" {
		return b.Password.Reveal(), nil
	}
	data, err := os.ReadFile(b.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("broker.password_file: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// Redacted returns a copy safe to log: the password is replaced and any password in the broker URL's
// user information is masked. The plants' parameter maps are shared with c, not copied.
func (c *Config) Redacted() Config {
	r := *c
	r.Plants = append([]Plant(nil), c.Plants...)
	if r.Broker.Password != "" {
		r.Broker.Password = redacted
	}
	r.Broker.URL = redactURL(r.Broker.URL)
	return r
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// liftURLPassword moves a password written into the broker URL's user information into Password,
// so that the URL can be logged and printed like any other field.
func (b *Broker) liftURLPassword() error {
	u, err := url.Parse(b.URL)
	if err != nil || u.User == nil {
		return nil // Validate reports a bad URL
	}
	pw, has := u.User.Password()
	if !has {
		return nil
	}
	if b.Password != "" || b.PasswordFile != "" {
		return fmt.Errorf("broker.url has a password and broker.password or broker.password_file is set too: keep one")
	}
	if b.Username != "" && b.Username != u.User.Username() {
		return fmt.Errorf("broker.url user %q differs from broker.username %q", u.User.Username(), b.Username)
	}
	b.Username, b.Password = u.User.Username(), Secret(pw)
	u.User = nil
	b.URL = u.String()
	return nil
}
