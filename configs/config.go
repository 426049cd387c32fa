package configs

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"gbdmpc/solver"
)

// Config is the whole daemon configuration. Zero values are filled with the documented defaults by
// Load (or by ApplyDefaults for a Config built in code).
type Config struct {
	Broker Broker `mapstructure:"broker" json:"broker"`
	// TopicPrefix is the first topic level of every topic the daemon uses (default "gbdmpc").
	TopicPrefix string      `mapstructure:"topic_prefix" json:"topic_prefix"`
	HTTP        HTTP        `mapstructure:"http" json:"http"`
	Log         Log         `mapstructure:"log" json:"log"`
	DecisionLog DecisionLog `mapstructure:"decision_log" json:"decision_log"`
	Plants      []Plant     `mapstructure:"plants" json:"plants"`
	// PolicyWatch is how often each plant's policy file is checked for a change (size, modification
	// time, then content hash); a changed file is loaded, checked and swapped in between solves, as a
	// reload would. Load defaults it to DefaultPolicyWatch when the key is absent; 0 disables the
	// watch (a Config built in code starts at 0, so it watches only when asked to).
	PolicyWatch time.Duration `mapstructure:"policy_watch" json:"policy_watch"`
	// HA makes this daemon one of an active/standby group for its plants (empty Node: off, the
	// daemon is always active).
	HA HA `mapstructure:"ha" json:"ha"`

	// path is the file the config was read from, for messages; empty when built in code.
	path string
	// families are the plant families Validate accepts (Source.Families); nil accepts any name.
	families []string
}

// Broker is the MQTT connection, and the embedded broker when Embedded is set.
type Broker struct {
	// Embedded starts an in-process broker on Listen and connects to it; URL must then be empty.
	Embedded bool `mapstructure:"embedded" json:"embedded"`
	// Listen is the embedded broker's TCP address (default 127.0.0.1:1883). It must be a loopback
	// address: the embedded broker admits every client without authentication.
	Listen string `mapstructure:"listen" json:"listen"`
	// URL of an external broker: tcp://, ssl://, tls://, mqtt://, mqtts://, ws:// or wss://.
	URL string `mapstructure:"url" json:"url"`
	// ClientID is the MQTT client id prefix (default gbdmpc-<host>-<pid>-<random>). The daemon opens
	// one session per plant, named ClientID-<plant id>, because MQTT allows one Last Will per session.
	ClientID     string `mapstructure:"client_id" json:"client_id"`
	Username     string `mapstructure:"username" json:"username"`
	Password     Secret `mapstructure:"password" json:"password"`
	PasswordFile string `mapstructure:"password_file" json:"password_file"`
	TLS          TLS    `mapstructure:"tls" json:"tls"`
	// KeepAlive is the MQTT keep-alive (default 30s); ConnectTimeout bounds one connection attempt
	// (default 10s); MaxReconnectInterval caps the reconnect back-off (default 10s).
	KeepAlive            time.Duration `mapstructure:"keepalive" json:"keepalive"`
	ConnectTimeout       time.Duration `mapstructure:"connect_timeout" json:"connect_timeout"`
	MaxReconnectInterval time.Duration `mapstructure:"max_reconnect_interval" json:"max_reconnect_interval"`
}

// TLS configures an ssl://, tls://, mqtts:// or wss:// connection. All files are PEM.
type TLS struct {
	CAFile   string `mapstructure:"ca_file" json:"ca_file"`
	CertFile string `mapstructure:"cert_file" json:"cert_file"`
	KeyFile  string `mapstructure:"key_file" json:"key_file"`
	// InsecureSkipVerify disables server certificate checks. For a lab bench only.
	InsecureSkipVerify bool `mapstructure:"insecure_skip_verify" json:"insecure_skip_verify"`
}

// HTTP is the metrics and health endpoint.
type HTTP struct {
	// Listen address of /metrics, /livez and /readyz (default 127.0.0.1:9464; "off" disables).
	Listen string `mapstructure:"listen" json:"listen"`
}

// Log configures the zap logger.
type Log struct {
	Level  string `mapstructure:"level" json:"level"`   // debug|info|warn|error (default info)
	Format string `mapstructure:"format" json:"format"` // json|console (default json)
}

// DecisionLog configures the crash-safe log of master problems and solves.
type DecisionLog struct {
	// Dir holds the log's segments; empty disables the decision log.
	Dir           string        `mapstructure:"dir" json:"dir"`
	MaxSegmentMB  int           `mapstructure:"max_segment_mb" json:"max_segment_mb"`   // default 64
	MaxSegmentAge time.Duration `mapstructure:"max_segment_age" json:"max_segment_age"` // default 1h
	MaxSegments   int           `mapstructure:"max_segments" json:"max_segments"`       // 0 keeps all
	Compress      bool          `mapstructure:"compress" json:"compress"`
	Fsync         string        `mapstructure:"fsync" json:"fsync"`             // interval|always|never (default interval)
	FsyncEvery    time.Duration `mapstructure:"fsync_every" json:"fsync_every"` // default 1s
	QueueSize     int           `mapstructure:"queue_size" json:"queue_size"`   // default 4096
}

// Plant is one controlled plant: its own topics, state, policy and controller.
type Plant struct {
	// ID is the plant's topic level: <prefix>/<id>/measurement etc. Letters, digits, '-', '_', '.'.
	ID string `mapstructure:"id" json:"id"`
	// Family is the plant family: pumpstation, synthesis, or model (a plant written as a model file).
	Family string `mapstructure:"family" json:"family"`
	// Model is a model plant's model (plant/model): the path of its file, relative to the config
	// file's directory, or the model itself written here as a mapping (its errors then name the
	// config file's lines). Required for family model, refused for the others.
	Model any `mapstructure:"model" json:"model,omitempty"`
	// Period is the control period: an action expires one period after its measurement's ts_ms.
	Period time.Duration `mapstructure:"period" json:"period"`
	// Deadline is the solve budget from the measurement's receipt (default period/2); it must be
	// shorter than Period. No action is published after it.
	Deadline time.Duration `mapstructure:"deadline" json:"deadline"`
	// DeadlineReserve is kept back from Deadline when the solve is told its deadline, for what a
	// solve cannot stop in the middle of (one NLP) and for publishing (default deadline/10, at least
	// 2ms). The action must be out by Deadline; the solver aims at Deadline − DeadlineReserve.
	DeadlineReserve time.Duration `mapstructure:"deadline_reserve" json:"deadline_reserve"`
	// MaxAge rejects measurements whose ts_ms is older than this when processed (default Period).
	MaxAge time.Duration `mapstructure:"max_age" json:"max_age"`
	// Policy is a policy file path, "builtin:NAME", or empty for classical GBD.
	Policy string `mapstructure:"policy" json:"policy"`
	// Spec is the plant's solver settings, under its own keys: master, nlp, eps, eps_tol, tmin,
	// tmax, cuts, agent_patience, agent_candidates, agent_polish (solver.Spec documents them).
	solver.Spec `mapstructure:",squash"`
	// SafeAfter is how many consecutive fallback periods may run on the shifted plan; the next one
	// applies the safe action (0: the mpc default, one move block of the pump station = 4).
	SafeAfter int `mapstructure:"safe_after" json:"safe_after"`
	// SafeAction overrides the family's safe action ("apply" object, e.g. pumps_on and flow_m3h).
	SafeAction map[string]any `mapstructure:"safe_action" json:"safe_action,omitempty"`
	// Params overrides the family's plant configuration (field names as the family documents them).
	Params map[string]any `mapstructure:"params" json:"params,omitempty"`
	// Mailbox is how many valid measurements wait while a solve runs (default 4); when full, the
	// oldest is dropped, so the newest always gets through. Those waiting are answered in order
	// while the recent solve times leave the newest its time, else only the newest is (the others
	// get an error, reason "superseded"). Invalid ones never enter: they are judged and answered on
	// arrival.
	Mailbox int `mapstructure:"mailbox" json:"mailbox"`
	// ErrorRate and ErrorBurst rate-limit the plant's error topic (a token bucket: ErrorBurst
	// messages at once, ErrorRate per second on average; defaults 2 and 10). Every rejection is
	// still counted in the metrics; an error message carries how many were suppressed before it.
	ErrorRate  float64 `mapstructure:"error_rate" json:"error_rate"`
	ErrorBurst int     `mapstructure:"error_burst" json:"error_burst"`
	// MaxPayloadBytes rejects a measurement larger than this before any of it is parsed (reason
	// too_large; default 64 KiB, over a hundred times a pump-station measurement). Parsing costs
	// several times a payload in memory, so the limit is what bounds a junk message's cost.
	MaxPayloadBytes int `mapstructure:"max_payload_bytes" json:"max_payload_bytes"`

	// file and index locate the plant in the config file it was read from (file "" when built in
	// code), so that an inline model can be read again with its lines (ModelNode).
	file  string
	index int
}

// HA is active/standby for the same plants through the broker (controller/ha.go). Daemons
// configured with the same plants, the same external broker and distinct Node names coordinate on
// each plant's retained status topic: exactly one publishes actions, the others watch and take over.
type HA struct {
	// Node names this daemon in its group (letters, digits, '-', '_', '.'). Empty turns HA off.
	Node string `mapstructure:"node" json:"node"`
	// TakeoverPeriods bounds how long a standby waits: it takes over at once when the active
	// daemon's status turns offline (its Last Will or its shutdown), and when a measurement has had
	// no action from the active one for this many periods, or while this many later measurements
	// arrived (default 2); a group starting with no active daemon claims after as many periods.
	TakeoverPeriods int `mapstructure:"takeover_periods" json:"takeover_periods"`
}

// Enabled reports whether active/standby is configured.
func (h HA) Enabled() bool { return h.Node != "" }

// Defaults.
const (
	DefaultTopicPrefix    = "gbdmpc"
	DefaultEmbeddedListen = "127.0.0.1:1883"
	DefaultHTTPListen     = "127.0.0.1:9464"
	DefaultKeepAlive      = 30 * time.Second
	DefaultConnectTimeout = 10 * time.Second
	DefaultMaxReconnect   = 10 * time.Second
	DefaultMailbox        = 4
	DefaultErrorRate      = 2.0
	DefaultErrorBurst     = 10
	DefaultMaxPayload     = 64 << 10
	DefaultSegmentMB      = 64
	DefaultSegmentAge     = time.Hour
	DefaultQueueSize      = 4096
	DefaultFsyncEvery     = time.Second
	DefaultPolicyWatch    = 2 * time.Second
	DefaultTakeover       = 2
	HTTPOff               = "off"
)

// ApplyDefaults fills zero fields with the documented defaults. Load calls it; code that builds a
// Config by hand calls it before Validate.
func (c *Config) ApplyDefaults() {
	c.TopicPrefix = cmp.Or(c.TopicPrefix, DefaultTopicPrefix)
	b := &c.Broker
	if b.Embedded && b.Listen == "" {
		b.Listen = DefaultEmbeddedListen
	}
	if b.ClientID == "" {
		b.ClientID = DefaultClientID() // drawn only when needed: it reads the host name and random bytes
	}
	b.KeepAlive = cmp.Or(b.KeepAlive, DefaultKeepAlive)
	b.ConnectTimeout = cmp.Or(b.ConnectTimeout, DefaultConnectTimeout)
	b.MaxReconnectInterval = cmp.Or(b.MaxReconnectInterval, DefaultMaxReconnect)
	c.HTTP.Listen = cmp.Or(c.HTTP.Listen, DefaultHTTPListen)
	c.Log.Level = cmp.Or(c.Log.Level, "info")
	c.Log.Format = cmp.Or(c.Log.Format, "json")
	d := &c.DecisionLog
	d.MaxSegmentMB = cmp.Or(d.MaxSegmentMB, DefaultSegmentMB)
	d.MaxSegmentAge = cmp.Or(d.MaxSegmentAge, DefaultSegmentAge)
	d.Fsync = cmp.Or(d.Fsync, "interval")
	d.FsyncEvery = cmp.Or(d.FsyncEvery, DefaultFsyncEvery)
	d.QueueSize = cmp.Or(d.QueueSize, DefaultQueueSize)
	if c.HA.Enabled() && c.HA.TakeoverPeriods == 0 {
		c.HA.TakeoverPeriods = DefaultTakeover
	}
	for i := range c.Plants {
		c.Plants[i].applyDefaults()
	}
}

func (p *Plant) applyDefaults() {
	if p.Deadline == 0 && p.Period > 0 {
		p.Deadline = p.Period / 2
	}
	if p.DeadlineReserve == 0 && p.Deadline > 0 {
		p.DeadlineReserve = max(2*time.Millisecond, p.Deadline/10)
	}
	p.MaxAge = cmp.Or(p.MaxAge, p.Period)
	p.Spec = p.Spec.WithDefaults()
	p.Mailbox = cmp.Or(p.Mailbox, DefaultMailbox)
	p.ErrorRate = cmp.Or(p.ErrorRate, DefaultErrorRate)
	p.ErrorBurst = cmp.Or(p.ErrorBurst, DefaultErrorBurst)
	p.MaxPayloadBytes = cmp.Or(p.MaxPayloadBytes, DefaultMaxPayload)
}

// DefaultClientID is gbdmpc-<host>-<pid>-<random>: unique per process, so two daemons (or a
// restarted one whose old session the broker still holds) never take over each other's session.
func DefaultClientID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	var r [4]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails on supported platforms
	return fmt.Sprintf("gbdmpc-%s-%d-%s", host, os.Getpid(), hex.EncodeToString(r[:]))
}

// Path is the file the configuration was read from ("" when built in code).
func (c *Config) Path() string { return c.path }

// Plant returns the plant with the given id.
func (c *Config) Plant(id string) (Plant, bool) {
	i := slices.IndexFunc(c.Plants, func(p Plant) bool { return p.ID == id })
	if i < 0 {
		return Plant{}, false
	}
	return c.Plants[i], true
}

// ParamsJSON is the plant-configuration override as JSON for the family to decode strictly (nil when
// there is none).
func (p *Plant) ParamsJSON() (json.RawMessage, error) { return mapJSON(p.Params) }

// SafeActionJSON is the safe-action override as JSON (nil when there is none).
func (p *Plant) SafeActionJSON() (json.RawMessage, error) { return mapJSON(p.SafeAction) }

func mapJSON(m map[string]any) (json.RawMessage, error) {
	if len(m) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(normalize(m))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// normalize turns the map[any]any that some YAML decoders produce into JSON-encodable maps.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}

// Topic returns <prefix>/<plant>/<kind>.
func (c *Config) Topic(plant, kind string) string { return c.TopicPrefix + "/" + plant + "/" + kind }

// BrokerURL is the URL the daemon connects to: the embedded broker's listener or Broker.URL.
func (c *Config) BrokerURL() string {
	if c.Broker.Embedded {
		return "tcp://" + c.Broker.Listen
	}
	return c.Broker.URL
}
