package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Preset is a named choice of network and optimiser for Train: the architecture and the weight
// decay of both stages. Training from the command line starts from one (gbdmpc train --preset),
// and single options may then be changed.
type Preset struct {
	Arch        Arch
	WeightDecay float64
}

// Presets of Table I's ablation (docs/experiments.md, "Table I"):
//
//   - "paper": the paper's network and features as its text gives them (global sum pooling, a
//     linear kernel network, per-kind cut normalisation, Adam);
//   - "paper-features": the paper's node and edge features with the network and normalisation
//     that fit them best here (each master normalised by its own argmin's symmetries, sum and max
//     pooling, an 8-unit kernel network): the headline run against the paper's numbers;
//   - "best" (the default): also the binary's index and each cut's coefficients as node features,
//     and AdamW with weight decay 0.01;
//   - "light": best's features and optimiser in a network small enough for the structured agent
//     on a station of 40 binaries, whose masters hold hundreds of carried cuts: two ECC layers of
//     32 and a linear kernel network, so that a proposal costs milliseconds, not the tens of
//     milliseconds best's 8-unit kernel networks over three layers of 64 take there
//     (BenchmarkProposeLarge);
//   - "light-node": light with a per-node head (Arch.PerNode): each binary's logit from its own
//     variable node's state and the readout, for the structured agent;
//   - "light-prev": light with each cut's value at the previous iterate (Arch.CutAtPrev).
var Presets = map[string]Preset{
	"paper":          {},
	"paper-features": {Arch: Arch{CutNorm: CutNormMaster, Pool: PoolSumMax, Kernel: 8}},
	"best": {Arch: Arch{CutNorm: CutNormMaster, Pool: PoolSumMax, Kernel: 8, VarIndex: true, CutCoefs: true},
		WeightDecay: 0.01},
	"light": {Arch: Arch{ECC: []int{32, 32}, Dense: []int{64}, CutNorm: CutNormMaster, Pool: PoolSumMax, VarIndex: true, CutCoefs: true},
		WeightDecay: 0.01},
	"light-prev": {Arch: Arch{ECC: []int{32, 32}, Dense: []int{64}, CutNorm: CutNormMaster, Pool: PoolSumMax, VarIndex: true, CutCoefs: true, CutAtPrev: true},
		WeightDecay: 0.01},
	"light-node": {Arch: Arch{ECC: []int{32, 32}, Dense: []int{64}, CutNorm: CutNormMaster, Pool: PoolSumMax, VarIndex: true, CutCoefs: true, PerNode: true},
		WeightDecay: 0.01},
}

// DefaultPreset is the preset of gbdmpc train and of the tests that train a policy.
const DefaultPreset = "best"

// PresetByName returns the named preset, or an error listing the known ones.
func PresetByName(name string) (Preset, error) {
	p, ok := Presets[name]
	if !ok {
		names := make([]string, 0, len(Presets))
		for n := range Presets {
			names = append(names, n)
		}
		slices.Sort(names)
		return Preset{}, fmt.Errorf("unknown preset %q (known: %s)", name, strings.Join(names, ", "))
	}
	return p, nil
}

// Apply sets cfg's architecture and both stages' weight decay to the preset's.
func (p Preset) Apply(cfg *TrainConfig) {
	cfg.Arch = p.Arch
	cfg.Stage1.WeightDecay = p.WeightDecay
	cfg.Stage2.WeightDecay = p.WeightDecay
}
