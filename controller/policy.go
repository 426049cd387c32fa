package controller

import (
	"hash/fnv"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/policy"
)

// LoadedPolicy is a plant's agent and the version that actions, status and decision records carry.
// Policy nil means classical GBD (Version empty).
type LoadedPolicy struct {
	Policy  gbd.Policy
	Version string
}

// PolicyLoader resolves a plant's policy setting: "" (classical GBD), "builtin:NAME" or a policy
// file. It is called once per plant at start and again on every reload; each call must return a new
// policy value, because a gbd.Policy serves one goroutine at a time and every plant has its own loop.
type PolicyLoader func(spec string, plantID string, fam mpc.Family) (LoadedPolicy, error)

// DefaultPolicyLoader reads policy files with policy.Load and refuses one trained for another family
// or action space (CheckFits), so a wrong file is caught at start or reload, never mid-step.
// Built-in names go to gbd/agent.NewBuiltin, seeded from the plant id so that a plant's random policy
// repeats across restarts.
func DefaultPolicyLoader(spec, plantID string, fam mpc.Family) (LoadedPolicy, error) {
	h := fnv.New64a()
	h.Write([]byte(plantID))
	p, version, err := policy.Resolve(spec, h.Sum64(), fam.Name(), fam.Admissible())
	if err != nil {
		return LoadedPolicy{}, err
	}
	return LoadedPolicy{Policy: p, Version: version}, nil
}
