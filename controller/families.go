package controller

import (
	"bytes"
	"encoding/json"
	"fmt"

	"gbdmpc/configs"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
)

// FamilyFactory builds a plant's family from its configuration (params and safe_action overrides).
type FamilyFactory func(p *configs.Plant) (mpc.Family, error)

// DefaultFamilies are the families the daemon ships, by configs family name.
func DefaultFamilies() map[string]FamilyFactory {
	return map[string]FamilyFactory{
		"pumpstation": newPumpStation,
		"synthesis":   newSynthesis,
	}
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

func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
