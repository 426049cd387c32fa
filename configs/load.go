package configs

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"gbdmpc/gbd/agent"
)

// EnvPrefix is the prefix of every environment variable the loader reads.
const EnvPrefix = "GBDMPC"

// Source says where a configuration comes from. Every field is optional; with none set, Load returns
// the defaults (which do not validate: a daemon needs at least one plant).
type Source struct {
	// File is a YAML configuration file.
	File string
	// Flags holds command-line overrides registered with RegisterFlags (or any flag whose name is a
	// dotted key such as "broker.url"); only flags set on the command line count.
	Flags *pflag.FlagSet
	// GoFlags is the same for a standard library flag set (RegisterGoFlags).
	GoFlags *flag.FlagSet
	// Overrides maps dotted keys ("broker.url", "plants") to values, above everything else.
	Overrides map[string]any
	// NoEnv ignores the environment (tests that must not see the caller's GBDMPC_* variables).
	NoEnv bool
	// Families are the plant families this build knows (plant/registry.Names): Validate refuses a
	// plant of any other. configs sits below the plant packages and cannot ask the registry itself;
	// without them any family name passes here, and the daemon refuses one it cannot build when it
	// builds it.
	Families []string
}

// flagKeys maps the flags of RegisterFlags to configuration keys.
var flagKeys = map[string]string{
	"broker-url":       "broker.url",
	"broker-embedded":  "broker.embedded",
	"broker-listen":    "broker.listen",
	"broker-client-id": "broker.client_id",
	"topic-prefix":     "topic_prefix",
	"http-listen":      "http.listen",
	"log-level":        "log.level",
	"log-format":       "log.format",
	"decision-log-dir": "decision_log.dir",
	"ha-node":          "ha.node",
}

// flagHelp documents each override flag once for both flag packages.
var flagHelp = map[string]string{
	"broker-url":       "external MQTT broker URL (overrides broker.url)",
	"broker-embedded":  "start the embedded broker (overrides broker.embedded)",
	"broker-listen":    "embedded broker listen address (overrides broker.listen)",
	"broker-client-id": "MQTT client id prefix (overrides broker.client_id)",
	"topic-prefix":     "MQTT topic prefix (overrides topic_prefix)",
	"http-listen":      "metrics and health listen address, or \"off\" (overrides http.listen)",
	"log-level":        "debug|info|warn|error (overrides log.level)",
	"log-format":       "json|console (overrides log.format)",
	"decision-log-dir": "decision log directory (overrides decision_log.dir)",
	"ha-node":          "this daemon's name in an active/standby group; empty: no standby (overrides ha.node)",
}

// RegisterGoFlags adds the same overrides as RegisterFlags to a standard library flag set.
func RegisterGoFlags(fs *flag.FlagSet) { registerFlags(fs) }

// RegisterFlags adds the command-line overrides `gbdmpc serve` accepts to fs.
func RegisterFlags(fs *pflag.FlagSet) { registerFlags(fs) }

// flagSet is what the standard library's and pflag's flag sets share.
type flagSet interface {
	Bool(name string, value bool, usage string) *bool
	String(name, value, usage string) *string
}

func registerFlags(fs flagSet) {
	for name, help := range flagHelp {
		if name == "broker-embedded" {
			fs.Bool(name, false, help)
		} else {
			fs.String(name, "", help)
		}
	}
}

// Load reads, defaults and validates a configuration. The returned error names the file and, for a
// validation failure, every problem found.
func Load(src Source) (*Config, error) {
	c, err := Read(src)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		if c.path != "" {
			return nil, fmt.Errorf("config %s: %w", c.path, err)
		}
		return nil, fmt.Errorf("config: %w", err)
	}
	return c, nil
}

// Read is Load without Validate, for tools that want to show a configuration before judging it.
func Read(src Source) (*Config, error) {
	v := viper.New()
	// A default here rather than in ApplyDefaults, because 0 is a meaningful setting (no watch) that
	// ApplyDefaults could not tell from "not set".
	v.SetDefault("policy_watch", DefaultPolicyWatch.String())
	if !src.NoEnv {
		v.SetEnvPrefix(EnvPrefix)
		v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
		v.AutomaticEnv()
		// Unmarshal only sees keys viper knows of, so every scalar key is bound to its variable.
		for _, k := range scalarKeys(reflect.TypeFor[Config](), "") {
			if err := v.BindEnv(k); err != nil {
				return nil, err
			}
		}
	}
	if src.File != "" {
		v.SetConfigFile(src.File)
		v.SetConfigType("yaml")
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("config %s: %w", src.File, err)
		}
	}
	// Only flags set on the command line count (Visit skips the others), so an unset flag's zero
	// default never hides the file's value.
	setFlag := func(name, value string) {
		key, ok := flagKeys[name]
		if !ok && strings.Contains(name, ".") {
			key, ok = name, true
		}
		if ok {
			v.Set(key, value)
		}
	}
	if src.Flags != nil {
		src.Flags.Visit(func(f *pflag.Flag) { setFlag(f.Name, f.Value.String()) })
	}
	if src.GoFlags != nil {
		src.GoFlags.Visit(func(f *flag.Flag) { setFlag(f.Name, f.Value.String()) })
	}
	for k, val := range src.Overrides {
		v.Set(k, val)
	}
	var c Config
	hook := mapstructure.ComposeDecodeHookFunc(
		refuseBareDurations,
		mapstructure.StringToTimeDurationHookFunc(),
	)
	if err := v.UnmarshalExact(&c, viper.DecodeHook(hook)); err != nil {
		if src.File != "" {
			return nil, fmt.Errorf("config %s: %w", src.File, cleanDecodeError(err))
		}
		return nil, fmt.Errorf("config: %w", cleanDecodeError(err))
	}
	c.families = src.Families
	if src.File != "" {
		c.path = src.File
		c.resolvePaths(filepath.Dir(src.File))
		for i := range c.Plants {
			c.Plants[i].file, c.Plants[i].index = src.File, i
		}
	}
	if err := c.Broker.liftURLPassword(); err != nil {
		return nil, err
	}
	c.ApplyDefaults()
	return &c, nil
}

var durationType = reflect.TypeFor[time.Duration]()

// refuseBareDurations rejects a number where a duration is expected: YAML reads "period: 900" as
// 900 ns, and a daemon running a 900 ns control period helps no one.
func refuseBareDurations(from, to reflect.Type, data any) (any, error) {
	if to != durationType || from == durationType {
		return data, nil
	}
	switch from.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return nil, fmt.Errorf("duration %v has no unit: write it as a string such as \"%vs\" or \"%vms\"", data, data, data)
	}
	return data, nil
}

// cleanDecodeError drops mapstructure's preamble and puts its list of problems on one line.
func cleanDecodeError(err error) error {
	msg := err.Error()
	if _, rest, ok := strings.Cut(msg, "error(s):"); ok {
		msg = rest
	}
	var parts []string
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "*")); l != "" {
			parts = append(parts, l)
		}
	}
	return errors.New(strings.Join(parts, "; "))
}

// scalarKeys lists the dotted mapstructure keys of t's non-slice, non-map fields.
func scalarKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("mapstructure")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		key := prefix + tag
		switch {
		case tag == ",squash": // an embedded struct whose keys are its parent's
			keys = append(keys, scalarKeys(f.Type, prefix)...)
		case f.Type.Kind() == reflect.Struct && f.Type != durationType:
			keys = append(keys, scalarKeys(f.Type, key+".")...)
		case f.Type.Kind() == reflect.Slice || f.Type.Kind() == reflect.Map:
		default:
			keys = append(keys, key)
		}
	}
	return keys
}

func (c *Config) resolvePaths(dir string) {
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	abs(&c.Broker.PasswordFile)
	abs(&c.Broker.TLS.CAFile)
	abs(&c.Broker.TLS.CertFile)
	abs(&c.Broker.TLS.KeyFile)
	abs(&c.DecisionLog.Dir)
	for i := range c.Plants {
		p := &c.Plants[i].Policy
		if *p != "" && !strings.HasPrefix(*p, BuiltinPrefix) {
			abs(p)
		}
		if f, ok := c.Plants[i].Model.(string); ok {
			abs(&f)
			c.Plants[i].Model = f
		}
	}
}

// BuiltinPrefix marks a policy that is compiled into the binary rather than read from a file.
const BuiltinPrefix = agent.BuiltinPrefix
