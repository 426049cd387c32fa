package replay

import (
	"context"
	"errors"
	"fmt"

	"gbdmpc/policy"
)

// Retraining modes, as reports name them.
const (
	ModeFineTune    = "fine-tune"    // stage 2 of Algorithm 1 on the base's frozen graph layers
	ModeFromScratch = "from-scratch" // both stages from fresh weights
)

// RetrainConfig says how to get the new policy from the replayed training slice.
type RetrainConfig struct {
	// FromScratch runs Algorithm 1 (stage 1 then stage 2) from fresh weights even when there is a base.
	// Without a base it is implied.
	FromScratch bool
	// Train configures policy.Train and policy.FineTune (seed, epochs, learning rates). From scratch
	// with a base, a zero Arch and Variant take the base's, so the new file is a drop-in replacement.
	Train policy.TrainConfig
}

// Retrain trains the new policy on train. With a base and not FromScratch it fine-tunes: policy offers
// stage 2 (dense and output layers, feasibility-aware loss) on top of the base's frozen graph layers
// and normalisation, which is cheap and keeps what the base learned; it cannot continue stage 1 from
// the base's weights. A base that is too weak for that needs FromScratch.
func Retrain(ctx context.Context, base *policy.Agent, train *policy.Dataset, cfg RetrainConfig) (*policy.Agent, string, error) {
	if len(train.Samples) == 0 {
		return nil, "", errors.New("replay: no training samples before the held-out slice")
	}
	if base != nil {
		if err := base.CheckFits(train.Family, train.Ypb); err != nil {
			return nil, "", fmt.Errorf("replay: base policy: %w", err)
		}
	}
	tc := cfg.Train
	if base == nil || cfg.FromScratch {
		if base != nil {
			if len(tc.Arch.ECC) == 0 && tc.Arch.Dense == nil && !tc.Arch.VarIndex {
				tc.Arch = base.Arch()
			}
			if tc.Variant == "" {
				tc.Variant = base.Variant()
			}
		}
		a, err := policy.Train(ctx, train, tc)
		if err != nil {
			return nil, "", fmt.Errorf("replay: retrain: %w", err)
		}
		return a, ModeFromScratch, nil
	}
	if base.Variant() == policy.Independent {
		return nil, "", errors.New("replay: the base is an independent-IL policy, which has no stage 2 to fine-tune; retrain it from scratch")
	}
	a, err := policy.FineTune(ctx, base, train, tc)
	if err != nil {
		return nil, "", fmt.Errorf("replay: fine-tune: %w", err)
	}
	return a, ModeFineTune, nil
}
