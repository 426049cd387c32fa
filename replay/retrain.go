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
	ModeContinue    = "continue"     // both stages again, from the base's weights
)

// RetrainConfig says how to get the new policy from the replayed training slice.
type RetrainConfig struct {
	// FromScratch runs Algorithm 1 (stage 1 then stage 2) from fresh weights even when there is a base.
	// Without a base it is implied.
	FromScratch bool
	// Continue runs both stages again from the base's weights (policy.Continue): the graph layers
	// adapt to the replayed data too, keeping what the base learned. Ignored without a base.
	Continue bool
	// Train configures policy.Train and policy.FineTune (seed, epochs, learning rates). From scratch
	// with a base, a zero Arch and Variant take the base's, so the new file is a drop-in replacement.
	Train policy.TrainConfig
}

// Retrain trains the new policy on train. With a base and neither FromScratch nor Continue it
// fine-tunes: stage 2 (dense and output layers, feasibility-aware loss) on top of the base's frozen
// graph layers and normalisation, which is cheap and keeps what the base learned. A base whose graph
// layers are too weak for the replayed data needs Continue (both stages from its weights) or
// FromScratch.
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
		if tc.Variant == "" && train.Ypb.Implicit() {
			tc.Variant = policy.Structured // the one network that does not enumerate Y_pb
		}
		a, err := policy.Train(ctx, train, tc)
		if err != nil {
			return nil, "", fmt.Errorf("replay: retrain: %w", err)
		}
		return a, ModeFromScratch, nil
	}
	if cfg.Continue {
		a, err := policy.Continue(ctx, base, train, tc)
		if err != nil {
			return nil, "", fmt.Errorf("replay: continue: %w", err)
		}
		return a, ModeContinue, nil
	}
	if base.Variant() == policy.Independent {
		return nil, "", errors.New("replay: the base is an independent-IL policy, which has no stage 2 to fine-tune; continue it or retrain it from scratch")
	}
	a, err := policy.FineTune(ctx, base, train, tc)
	if err != nil {
		return nil, "", fmt.Errorf("replay: fine-tune: %w", err)
	}
	return a, ModeFineTune, nil
}
