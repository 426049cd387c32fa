package main

import (
	"fmt"
	"strings"

	"gbdmpc/backend"
	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/plant/registry"
	"gbdmpc/policy"
)

// family is what the offline commands need of a plant family.
type family = mpc.Family

func familyByName(name string) (family, error) { return registry.Default(name) }

// masterFor resolves --master for a family's Y_pb through backend's table ("auto" picks by Y_pb),
// returning the back-end's name; an empty name is refused here because every command gives the
// flag an explicit default.
func masterFor(name string, ypb *gbd.Admissible) (func() gbd.Master, string, error) {
	if name == "" {
		return nil, "", fmt.Errorf("--master needs a back-end name (have %s)", strings.Join(backend.MasterNames, ", "))
	}
	return backend.MasterFor(name, ypb)
}

// loadPolicy resolves --policy: empty for classical GBD, builtin:NAME, or a policy file that must
// fit the family's Y_pb. The version is the file's, or the spec of a built-in policy ("" for
// classical GBD).
func loadPolicy(spec string, seed uint64, fam family) (gbd.Policy, string, error) {
	return policy.Resolve(spec, seed, fam.Name(), fam.Admissible())
}
