package main

import (
	"flag"
	"fmt"
	"math/rand/v2"

	"gbdmpc/configs"
	"gbdmpc/controller"
	"gbdmpc/experiment"
	"gbdmpc/plant/pumpstation"
)

// plantConfig is --config and --config-plant: the offline commands take a plant's family and its
// params (pump list, blocks, max running, ...) from a daemon configuration, so that a station
// configured for the daemon is the one solved, simulated, benchmarked and replayed.
type plantConfig struct {
	file, id string
}

func (pc *plantConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&pc.file, "config", "", "daemon config file: take the plant family and its params (pumps, blocks, max running, ...) from it; --plant is then ignored")
	fs.StringVar(&pc.id, "config-plant", "", "with --config: the plant id (default: the file's first plant)")
}

// plant returns the configured plant, or nil without --config.
func (pc *plantConfig) plant() (*configs.Plant, error) {
	if pc.file == "" {
		if pc.id != "" {
			return nil, fmt.Errorf("--config-plant needs --config")
		}
		return nil, nil
	}
	c, err := configs.Load(configs.Source{File: pc.file, NoEnv: true})
	if err != nil {
		return nil, err
	}
	if len(c.Plants) == 0 {
		return nil, fmt.Errorf("config %s: no plants", pc.file)
	}
	if pc.id == "" {
		return &c.Plants[0], nil
	}
	for i := range c.Plants {
		if c.Plants[i].ID == pc.id {
			return &c.Plants[i], nil
		}
	}
	return nil, fmt.Errorf("config %s: no plant %q", pc.file, pc.id)
}

// family resolves the family: the configured plant's with --config, else the named family's default.
func (pc *plantConfig) family(name string) (family, error) {
	p, err := pc.plant()
	if err != nil || p == nil {
		if err != nil {
			return nil, err
		}
		return familyByName(name)
	}
	make, ok := controller.DefaultFamilies()[p.Family]
	if !ok {
		return nil, fmt.Errorf("config %s: unknown plant family %q", pc.file, p.Family)
	}
	f, err := make(p)
	if err != nil {
		return nil, fmt.Errorf("config %s, plant %s: %w", pc.file, p.ID, err)
	}
	return f, nil
}

// sampler draws instances that fit fam (its configured size for the pump station).
func sampler(fam family) (experiment.Sampler, error) {
	if ps, ok := fam.(*pumpstation.Family); ok {
		cfg := ps.Config()
		prof := pumpstation.DefaultProfile()
		return func(rng *rand.Rand) []byte {
			return pumpstation.MarshalInstance(pumpstation.Sample(rng, &cfg, &prof))
		}, nil
	}
	return samplerByName(fam.Name())
}
