package solver

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FlagName is the command-line flag of a config key: "--" and the key with '-' for '_'
// (eps_tol is --eps-tol).
func FlagName(key string) string { return "--" + flagOf(key) }

func flagOf(key string) string { return strings.ReplaceAll(key, "_", "-") }

// specField is one field of Spec as its tags describe it.
type specField struct {
	index int
	key   string
	usage string
}

// specFields lists Spec's fields from their tags: the one description flags, help and config keys
// come from.
func specFields() []specField {
	t := reflect.TypeFor[Spec]()
	fields := make([]specField, t.NumField())
	for i := range fields {
		f := t.Field(i)
		fields[i] = specField{index: i, key: f.Tag.Get("mapstructure"), usage: f.Tag.Get("usage")}
		switch fields[i].key {
		case "master":
			fields[i].usage += ": " + describe(masters)
		case "nlp":
			fields[i].usage += ": " + describe(nlps)
		case "cuts":
			fields[i].usage += ": " + describe(cutKinds)
		}
	}
	return fields
}

// RegisterFlags adds a flag to fs for each of s's settings named by its config key in keys (every
// setting when keys is empty), with s's values as the defaults. A command that takes only some of
// the settings names them; the others keep s's values.
func (s *Spec) RegisterFlags(fs *flag.FlagSet, keys ...string) {
	v := reflect.ValueOf(s).Elem()
	for _, f := range specFields() {
		if len(keys) > 0 && !slices.Contains(keys, f.key) {
			continue
		}
		name := flagOf(f.key)
		switch p := v.Field(f.index).Addr().Interface().(type) {
		case *string:
			fs.StringVar(p, name, *p, f.usage)
		case *float64:
			fs.Float64Var(p, name, *p, f.usage)
		case *time.Duration:
			DurationVar(fs, p, name, *p, f.usage)
		case *int:
			fs.IntVar(p, name, *p, f.usage)
		case *bool:
			fs.BoolVar(p, name, *p, f.usage)
		default:
			panic(fmt.Sprintf("solver: Spec field %s has no flag type", f.key)) // a new field's type: add its case
		}
	}
}

// CheckFlags gives s's zero settings their defaults and reports every problem of the result, each
// naming its flag: what a command does with its spec once its flags are parsed.
func (s *Spec) CheckFlags() error {
	*s = s.WithDefaults()
	return errors.Join(s.Problems(FlagName)...)
}

// Over is base with every setting whose flag was given on fs's command line taken from s (whose
// flags RegisterFlags added to fs): a command's flags over a configured plant's settings.
func (s Spec) Over(base Spec, fs *flag.FlagSet) Spec {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	from, to := reflect.ValueOf(s), reflect.ValueOf(&base).Elem()
	for _, f := range specFields() {
		if given[flagOf(f.key)] {
			to.Field(f.index).Set(from.Field(f.index))
		}
	}
	return base
}

// DurationVar defines a duration flag that also takes a bare number as seconds: "--deadline 0.8"
// is "--deadline 800ms", as the commands' flags were given before they took units. Its help says
// so after usage.
func DurationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationValue)(p), name, usage+": a `duration` (800ms) or seconds (0.8)")
}

type durationValue time.Duration

func (d *durationValue) Set(s string) error {
	if sec, err := strconv.ParseFloat(s, 64); err == nil {
		ns := sec * float64(time.Second)
		if math.IsNaN(ns) || math.Abs(ns) >= math.MaxInt64 {
			return fmt.Errorf("%q is not a duration in seconds", s)
		}
		*d = durationValue(math.Round(ns))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q: want a duration such as 800ms or 2s, or seconds such as 0.8", s)
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return time.Duration(*d).String() }
