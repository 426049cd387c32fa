// Package registry is the one table of plant families: for each, its name (as configs, policy
// files and decision logs spell it), how a configured plant builds it (params and safe_action
// overrides, strictly decoded), its default, and how experiments draw instances of it. The daemon,
// the CLI and replay resolve families here, and load configs with Names for configs to check a
// plant's family against (configs.Source.Families).
package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"

	"gbdmpc/configs"
	"gbdmpc/mpc"
	"gbdmpc/plant/model"
	"gbdmpc/plant/pumpstation"
	"gbdmpc/plant/synthesis"
)

// Factory builds a plant's family from its configuration (params and safe_action overrides); a
// zero configs.Plant gives the family's defaults.
type Factory func(p *configs.Plant) (mpc.Family, error)

// Sampler draws one instance of a family, as its measurement's fields (JSON), for datagen and bench.
type Sampler func(rng *rand.Rand) []byte

type entry struct {
	name    string
	build   Factory
	sampler func(mpc.Family) Sampler
}

var table = []entry{
	{pumpstation.Name, newPumpStation, func(fam mpc.Family) Sampler {
		f, ok := fam.(*pumpstation.Family)
		if !ok {
			return nil
		}
		cfg, prof := f.Config(), pumpstation.DefaultProfile()
		return func(rng *rand.Rand) []byte { return pumpstation.MarshalInstance(pumpstation.Sample(rng, &cfg, &prof)) }
	}},
	{model.Name, newModel, func(fam mpc.Family) Sampler {
		f, ok := fam.(*model.Family)
		if !ok {
			return nil
		}
		m := f.Model()
		return func(rng *rand.Rand) []byte {
			in := m.Sample(rng)
			return m.MarshalInstance(&in)
		}
	}},
	{synthesis.Family, newSynthesis, func(mpc.Family) Sampler {
		// Feasible parameter sets, as the paper drew them.
		return func(rng *rand.Rand) []byte { return synthesis.MarshalInstance(synthesis.SampleFeasible(rng)) }
	}},
}

// Names are the families this build knows, sorted.
func Names() []string {
	out := make([]string, len(table))
	for i, e := range table {
		out[i] = e.name
	}
	slices.Sort(out)
	return out
}

func lookup(name string) (entry, error) {
	for _, e := range table {
		if e.name == name {
			return e, nil
		}
	}
	return entry{}, fmt.Errorf("unknown plant family %q (have %v)", name, Names())
}

// Factories maps every family name to its Factory (the daemon's Deps.Families).
func Factories() map[string]Factory {
	m := make(map[string]Factory, len(table))
	for _, e := range table {
		m[e.name] = e.build
	}
	return m
}

// FromConfig builds the configured plant's family.
func FromConfig(p *configs.Plant) (mpc.Family, error) {
	e, err := lookup(p.Family)
	if err != nil {
		return nil, err
	}
	return e.build(p)
}

// Default is the named family with its default configuration.
func Default(name string) (mpc.Family, error) {
	e, err := lookup(name)
	if err != nil {
		return nil, err
	}
	return e.build(&configs.Plant{Family: name})
}

// SamplerFor draws instances of fam (of its configured size for the pump station).
func SamplerFor(fam mpc.Family) (Sampler, error) {
	if e, err := lookup(fam.Name()); err == nil {
		if s := e.sampler(fam); s != nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("no instance sampler for plant family %q", fam.Name())
}

// newPumpStation starts from the spec's numbers and lets params override any documented field of
// pumpstation.Config; an unknown field is an error, so a typo cannot silently fall back to a default.
func newPumpStation(p *configs.Plant) (mpc.Family, error) {
	cfg := pumpstation.DefaultConfig()
	params, err := p.ParamsJSON()
	if err != nil {
		return nil, err
	}
	if params != nil {
		if err := strictDecode(params, &cfg); err != nil {
			return nil, fmt.Errorf("params: %w", err)
		}
	}
	safe, err := p.SafeActionJSON()
	if err != nil {
		return nil, err
	}
	if safe != nil {
		a, err := pumpstation.DecodeApply(safe, &cfg)
		if err != nil {
			return nil, fmt.Errorf("safe_action: %w", err)
		}
		// An operator's fixed safe action replaces the level-holding rule.
		cfg.SafeOn, cfg.SafeFlow, cfg.SafeHold = a.PumpsOn, a.Flow, false
	}
	return pumpstation.NewFamily(cfg)
}

// newModel reads the plant's model: its file (resolved against the config's directory), the
// model written inline in the config (read again with its lines), or without either the pump
// station written as a model (configs.DefaultModel). Its numbers are the model's, so params are
// refused; safe_action may replace the model's safe action (every input and unit by name).
func newModel(p *configs.Plant) (mpc.Family, error) {
	if len(p.Params) > 0 {
		return nil, fmt.Errorf("params: a model plant takes every number from its model file")
	}
	var m *model.Model
	var err error
	if file, ok := p.ModelFile(); ok {
		m, err = model.LoadFile(file)
	} else if p.Model == nil || p.Model == "" {
		m, err = model.Parse(configs.DefaultModelFile, configs.DefaultModel)
	} else {
		file, node, nerr := p.ModelNode()
		if nerr != nil {
			return nil, nerr
		}
		m, err = model.ParseNode(file, node)
	}
	if err != nil {
		return nil, err
	}
	f, err := model.NewFamily(m)
	if err != nil {
		return nil, err
	}
	safe, err := p.SafeActionJSON()
	if err != nil || safe == nil {
		return f, err
	}
	g, err := f.WithSafeAction(safe)
	if err != nil {
		return nil, fmt.Errorf("safe_action: %w", err)
	}
	return g, nil
}

// newSynthesis is the paper's static synthesis problem as a plant: a "measurement" carries θ and the
// action is the optimal y, so the daemon's whole MQTT path runs on the problem the paper's numbers
// come from. It has no plant configuration; safe_action may replace the family's {"y":null,"x":null}.
func newSynthesis(p *configs.Plant) (mpc.Family, error) {
	if len(p.Params) > 0 {
		return nil, fmt.Errorf("params: the synthesis family has no plant configuration")
	}
	safe, err := p.SafeActionJSON()
	if err != nil {
		return nil, err
	}
	f := synthesis.NewFamily()
	if safe == nil {
		return f, nil
	}
	return &synthesisWithSafe{MPCFamily: f, safe: safe}, nil
}

// synthesisWithSafe replaces the family's safe action with the configured one.
type synthesisWithSafe struct {
	*synthesis.MPCFamily
	safe json.RawMessage
}

func (f *synthesisWithSafe) SafeAction() mpc.Action { return f.safe }

func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
