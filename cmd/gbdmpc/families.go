package main

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"gbdmpc/backend"
	"gbdmpc/experiment"
	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
	"gbdmpc/plant/synthesis"
	"gbdmpc/policy"
)

// family is what the offline commands need of a plant family.
type family = mpc.Family

func familyByName(name string) (family, error) {
	f, ok := families()[name]
	if !ok {
		return nil, fmt.Errorf("unknown plant family %q (have synthesis, pumpstation)", name)
	}
	return f(), nil
}

// masterByName resolves --master through mpc's table of back-ends; an empty name is refused here
// because every command gives the flag an explicit default.
func masterByName(name string) (func() gbd.Master, error) {
	if name == "" {
		return nil, fmt.Errorf("--master needs a back-end name (have %s)", strings.Join(backend.MasterNames, ", "))
	}
	return backend.MasterByName(name)
}

// loadPolicy resolves --policy: empty for classical GBD, builtin:NAME, or a policy file that must
// fit the family's Y_pb.
func loadPolicy(spec string, seed uint64, fam family) (gbd.Policy, error) {
	if spec == "" {
		return nil, nil
	}
	if name, ok := strings.CutPrefix(spec, "builtin:"); ok {
		return gbd.NewBuiltin(name, seed)
	}
	a, err := policy.Load(spec)
	if err != nil {
		return nil, err
	}
	if err := a.CheckFits(fam.Name(), fam.Admissible()); err != nil {
		return nil, fmt.Errorf("policy %s: %w", spec, err)
	}
	return a, nil
}

// families are the plant families the commands know, with their default configuration.
func families() map[string]func() family {
	return map[string]func() family{
		"synthesis": func() family { return synthesis.NewFamily() },
		"pumpstation": func() family {
			f, err := pumpstation.NewFamily(pumpstation.DefaultConfig())
			if err != nil {
				panic("pumpstation: default configuration invalid: " + err.Error()) // constant data
			}
			return f
		},
	}
}

// sampler draws instances of fam for datagen and bench: feasible parameter sets for synthesis
// (as the paper did), daily-profile scenarios of its configured size for the pump station.
func sampler(fam family) (experiment.Sampler, error) {
	switch f := fam.(type) {
	case *pumpstation.Family:
		cfg := f.Config()
		prof := pumpstation.DefaultProfile()
		return func(rng *rand.Rand) []byte {
			return pumpstation.MarshalInstance(pumpstation.Sample(rng, &cfg, &prof))
		}, nil
	case *synthesis.MPCFamily:
		return func(rng *rand.Rand) []byte {
			return synthesis.MarshalInstance(synthesis.SampleFeasible(rng))
		}, nil
	}
	return nil, fmt.Errorf("no instance sampler for plant family %q", fam.Name())
}
