package main

import (
	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/plant/registry"
	"gbdmpc/policy"
)

// family is what the offline commands need of a plant family.
type family = mpc.Family

func familyByName(name string) (family, error) { return registry.Default(name) }

// loadPolicy resolves --policy: empty for classical GBD, builtin:NAME, or a policy file that must
// fit the family's Y_pb. The version is the file's, or the spec of a built-in policy ("" for
// classical GBD).
func loadPolicy(spec string, seed uint64, fam family) (gbd.Policy, string, error) {
	return policy.Resolve(spec, seed, fam.Name(), fam.Admissible())
}
