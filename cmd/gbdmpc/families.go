package main

import (
	"fmt"
	"strings"

	"gbdmpc/backend"
	"gbdmpc/experiment"
	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/plant/registry"
	"gbdmpc/policy"
)

// family is what the offline commands need of a plant family.
type family = mpc.Family

func familyByName(name string) (family, error) { return registry.Default(name) }

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
	p, _, err := policy.Resolve(spec, seed, fam.Name(), fam.Admissible())
	return p, err
}

// sampler draws instances of fam for datagen and bench (registry.SamplerFor).
func sampler(fam family) (experiment.Sampler, error) {
	s, err := registry.SamplerFor(fam)
	if err != nil {
		return nil, err
	}
	return experiment.Sampler(s), nil
}
