package configs

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
)

// Validate reports every problem of c, one per line (errors.Join), each naming its key. It checks
// files that must exist (TLS, password file, policy files) but reads none.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if err := checkTopicLevel(c.TopicPrefix, true); err != nil {
		add("topic_prefix %q: %v", c.TopicPrefix, err)
	}
	errs = append(errs, c.Broker.validate()...)
	if l := c.HTTP.Listen; l != HTTPOff {
		if _, _, err := net.SplitHostPort(l); err != nil {
			add("http.listen %q: want host:port or %q: %v", l, HTTPOff, err)
		}
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		add("log.level %q: want debug, info, warn or error", c.Log.Level)
	}
	if c.Log.Format != "json" && c.Log.Format != "console" {
		add("log.format %q: want json or console", c.Log.Format)
	}
	errs = append(errs, c.DecisionLog.validate()...)
	nonNegative(&errs, "policy_watch", c.PolicyWatch)
	errs = append(errs, c.HA.validate(&c.Broker)...)

	if len(c.Plants) == 0 {
		add("plants: at least one plant is required")
	}
	seen := map[string]int{}
	for i := range c.Plants {
		p := &c.Plants[i]
		if j, dup := seen[p.ID]; dup && p.ID != "" {
			add("plants[%d]: duplicate plant id %q (also plants[%d])", i, p.ID, j)
		}
		seen[p.ID] = i
		for _, err := range p.validate(c.families) {
			errs = append(errs, fmt.Errorf("plants[%d] (%s): %w", i, p.ID, err))
		}
	}
	return errors.Join(errs...)
}

// checkTopicLevel refuses what would make a topic ambiguous or a filter: wildcards, NUL, empty
// levels, and (for the prefix) a leading '$', which brokers reserve for their own topics.
func checkTopicLevel(s string, multiLevel bool) error {
	switch {
	case s == "":
		return errors.New("must not be empty")
	case strings.ContainsAny(s, "+#"):
		return errors.New("must not contain the MQTT wildcards + or #")
	case strings.ContainsRune(s, 0):
		return errors.New("must not contain NUL")
	case strings.HasPrefix(s, "$"):
		return errors.New("must not start with $ (reserved for broker topics)")
	case !multiLevel && strings.Contains(s, "/"):
		return errors.New("must be a single topic level (no /)")
	case strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") || strings.Contains(s, "//"):
		return errors.New("must not have empty topic levels (leading, trailing or double /)")
	}
	return nil
}

var urlSchemes = []string{"tcp", "ssl", "tls", "mqtt", "mqtts", "ws", "wss"}

// TLSScheme reports whether a broker URL scheme is encrypted.
func TLSScheme(scheme string) bool {
	return scheme == "ssl" || scheme == "tls" || scheme == "mqtts" || scheme == "wss"
}

func (b *Broker) validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	tlsSet := b.TLS.CAFile != "" || b.TLS.CertFile != "" || b.TLS.KeyFile != "" || b.TLS.InsecureSkipVerify
	if b.Embedded {
		if b.URL != "" {
			add("broker.url %q: must be empty when broker.embedded is true (the daemon connects to its own broker)", redactURL(b.URL))
		}
		host, _, err := net.SplitHostPort(b.Listen)
		switch {
		case err != nil:
			add("broker.listen %q: want host:port: %v", b.Listen, err)
		case !IsLoopback(host):
			add("broker.listen %q: the embedded broker admits every client, so it must listen on a loopback address", b.Listen)
		}
		if tlsSet {
			add("broker.tls: not used with the embedded broker, which listens on loopback in plain TCP")
		}
	} else {
		if b.URL == "" {
			add("broker.url: required when broker.embedded is false")
		} else if u, err := url.Parse(b.URL); err != nil {
			add("broker.url: %v", err)
		} else {
			switch {
			case !slices.Contains(urlSchemes, u.Scheme):
				add("broker.url %q: scheme %q is not one of %s", redactURL(b.URL), u.Scheme, strings.Join(urlSchemes, ", "))
			case u.Host == "":
				add("broker.url %q: no host", redactURL(b.URL))
			case tlsSet && !TLSScheme(u.Scheme):
				add("broker.tls is set but broker.url uses %s://, which is not encrypted (use ssl://, tls://, mqtts:// or wss://)", u.Scheme)
			}
		}
	}
	if b.ClientID == "" || len(b.ClientID) > 200 {
		add("broker.client_id: must be 1 to 200 characters")
	}
	if b.Password != "" && b.PasswordFile != "" {
		add("broker.password and broker.password_file are both set: keep one")
	}
	if (b.Password != "" || b.PasswordFile != "") && b.Username == "" {
		add("broker.username: required when a password is configured")
	}
	checkFile := func(key, path string) {
		if path == "" {
			return
		}
		if st, err := os.Stat(path); err != nil {
			add("%s: %v", key, err)
		} else if st.IsDir() {
			add("%s %q: is a directory", key, path)
		}
	}
	checkFile("broker.password_file", b.PasswordFile)
	checkFile("broker.tls.ca_file", b.TLS.CAFile)
	checkFile("broker.tls.cert_file", b.TLS.CertFile)
	checkFile("broker.tls.key_file", b.TLS.KeyFile)
	if (b.TLS.CertFile == "") != (b.TLS.KeyFile == "") {
		add("broker.tls: cert_file and key_file go together (client certificate)")
	}
	nonNegative(&errs, "broker.keepalive", b.KeepAlive)
	nonNegative(&errs, "broker.connect_timeout", b.ConnectTimeout)
	nonNegative(&errs, "broker.max_reconnect_interval", b.MaxReconnectInterval)
	if b.KeepAlive > 0 && b.KeepAlive < time.Second {
		add("broker.keepalive %v: MQTT counts keep-alive in whole seconds, want at least 1s", b.KeepAlive)
	}
	return errs
}

// IsLoopback reports whether host (a name or an address) only reaches this machine.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func nonNegative[T int | time.Duration](errs *[]error, key string, d T) {
	if d < 0 {
		*errs = append(*errs, fmt.Errorf("%s %v: must not be negative", key, d))
	}
}

func (d *DecisionLog) validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	nonNegative(&errs, "decision_log.max_segment_mb", d.MaxSegmentMB)
	nonNegative(&errs, "decision_log.max_segments", d.MaxSegments)
	nonNegative(&errs, "decision_log.queue_size", d.QueueSize)
	nonNegative(&errs, "decision_log.max_segment_age", d.MaxSegmentAge)
	nonNegative(&errs, "decision_log.fsync_every", d.FsyncEvery)
	if !slices.Contains([]string{"interval", "always", "never"}, d.Fsync) {
		add("decision_log.fsync %q: want interval, always or never", d.Fsync)
	}
	if d.Dir != "" {
		if st, err := os.Stat(d.Dir); err == nil && !st.IsDir() {
			add("decision_log.dir %q: is not a directory", d.Dir)
		}
	}
	return errs
}

func (h *HA) validate(b *Broker) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !h.Enabled() {
		if h.TakeoverPeriods != 0 {
			add("ha.takeover_periods is set but ha.node is empty (active/standby is off without a node name)")
		}
		return errs
	}
	if len(h.Node) > 64 || strings.TrimLeft(h.Node, idChars) != "" {
		add("ha.node %q: use 1 to 64 letters, digits, '-', '_' and '.'", h.Node)
	}
	if h.TakeoverPeriods < 1 {
		add("ha.takeover_periods %d: must be at least 1", h.TakeoverPeriods)
	}
	if b.Embedded {
		add("ha.node is set but broker.embedded is true: the daemons of a group coordinate through one external broker they share")
	}
	return errs
}

// minPayloadBytes is the smallest max_payload_bytes accepted: below it no measurement of any
// family fits.
const minPayloadBytes = 128

const idChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."

func (p *Plant) validate(families []string) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if err := checkTopicLevel(p.ID, false); err != nil {
		add("id %q: %v", p.ID, err)
	} else if strings.TrimLeft(p.ID, idChars) != "" {
		add("id %q: use letters, digits, '-', '_' and '.' only", p.ID)
	}
	switch {
	case families != nil && !slices.Contains(families, p.Family):
		add("family %q: unknown family, want one of %s", p.Family, strings.Join(families, ", "))
	case p.Family == "":
		add("family: required")
	}
	switch m := p.Model.(type) {
	case nil:
		if p.Family == "model" {
			add("family model: model (a model file, or the model written as a mapping) is required")
		}
	case string:
		switch {
		case p.Family != "model":
			add("model %q: only a plant of family model reads a model (family is %q)", m, p.Family)
		case m == "":
			add("family model: model (a model file, or the model written as a mapping) is required")
		}
	case map[string]any:
		switch {
		case p.Family != "model":
			add("model: only a plant of family model reads a model (family is %q)", p.Family)
		case p.file == "":
			add("model: a model written inline must come from a config file (its errors name the file's lines)")
		}
	default:
		add("model: want a model file's path or the model as a mapping, got %T", m)
	}
	switch {
	case p.Period <= 0:
		add("period %v: must be positive", p.Period)
	case p.Deadline <= 0:
		add("deadline %v: must be positive", p.Deadline)
	case p.Deadline >= p.Period:
		add("deadline %v: must be shorter than period %v (the action must go out before the next measurement)", p.Deadline, p.Period)
	}
	if p.DeadlineReserve < 0 || (p.Deadline > 0 && p.DeadlineReserve >= p.Deadline) {
		add("deadline_reserve %v: must be at least 0 and shorter than deadline %v", p.DeadlineReserve, p.Deadline)
	}
	if p.MaxAge <= 0 {
		add("max_age %v: must be positive", p.MaxAge)
	}
	errs = append(errs, p.Spec.Problems(nil)...)
	nonNegative(&errs, "safe_after", p.SafeAfter)
	if p.Mailbox < 1 {
		add("mailbox %d: must be at least 1", p.Mailbox)
	}
	if !(p.ErrorRate > 0) || math.IsInf(p.ErrorRate, 0) {
		add("error_rate %v: must be a positive number of error messages per second", p.ErrorRate)
	}
	if p.ErrorBurst < 1 {
		add("error_burst %d: must be at least 1", p.ErrorBurst)
	}
	if p.MaxPayloadBytes < minPayloadBytes {
		add("max_payload_bytes %d: must be at least %d (a measurement's envelope alone takes tens of bytes)", p.MaxPayloadBytes, minPayloadBytes)
	}
	switch name, builtin := strings.CutPrefix(p.Policy, BuiltinPrefix); {
	case p.Policy == "":
	case builtin && name == "":
		add("policy %q: builtin policy without a name", p.Policy)
	case !builtin:
		if st, err := os.Stat(p.Policy); err != nil {
			add("policy: %v", err)
		} else if st.IsDir() {
			add("policy %q: is a directory", p.Policy)
		}
	}
	if _, err := p.ParamsJSON(); err != nil {
		add("params: %v", err)
	}
	if _, err := p.SafeActionJSON(); err != nil {
		add("safe_action: %v", err)
	}
	return errs
}
