package main

import (
	"flag"
	"fmt"

	"gbdmpc/configs"
	"gbdmpc/plant/registry"
)

// plantConfig is --config and --config-plant: the offline commands take a plant's family and its
// params (pump list, blocks, max running, ...) from a daemon configuration, so that a station
// configured for the daemon is the one solved, simulated, benchmarked and replayed.
type plantConfig struct {
	file, id string
	loaded   *configs.Plant // the plant, once read
}

func (pc *plantConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&pc.file, "config", "", "daemon config file: take the plant family and its params (pumps, blocks, max running, ...) from it; --plant is then ignored")
	fs.StringVar(&pc.id, "config-plant", "", "with --config: the plant id (default: the file's first plant)")
}

// plant returns the configured plant, or nil without --config. The file is read once.
func (pc *plantConfig) plant() (*configs.Plant, error) {
	if pc.loaded != nil {
		return pc.loaded, nil
	}
	if pc.file == "" {
		if pc.id != "" {
			return nil, fmt.Errorf("--config-plant needs --config")
		}
		return nil, nil
	}
	c, err := configs.Load(configs.Source{File: pc.file, NoEnv: true, Families: registry.Names()})
	if err != nil {
		return nil, err
	}
	if len(c.Plants) == 0 {
		return nil, fmt.Errorf("config %s: no plants", pc.file)
	}
	for i := range c.Plants {
		if pc.id == "" || c.Plants[i].ID == pc.id {
			pc.loaded = &c.Plants[i]
			return pc.loaded, nil
		}
	}
	return nil, fmt.Errorf("config %s: no plant %q", pc.file, pc.id)
}

// family resolves the family: the configured plant's with --config, else the named family's default.
func (pc *plantConfig) family(name string) (family, error) {
	p, err := pc.plant()
	switch {
	case err != nil:
		return nil, err
	case p == nil:
		return familyByName(name)
	}
	f, err := registry.FromConfig(p)
	if err != nil {
		return nil, fmt.Errorf("config %s, plant %s: %w", pc.file, p.ID, err)
	}
	return f, nil
}
