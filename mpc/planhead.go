package mpc

import (
	"fmt"
	"math"

	"gbdmpc/gbd"
)

// PlanHead is what every family's published plan (Plan.JSON) says about its horizon, whatever
// else it holds: the step length, the move blocks, the steps applied since the solve and the
// solve's block binaries (unit-major).
type PlanHead struct {
	Dt      float64
	Blocks  int
	Shifted int
	Y       []float64
}

// Check is the part of PlanDecoder that every family does alike: a plan read back must have the
// family's step length dt and blocking, a shift within the horizon, one binary 0 or 1 per unit and
// block, and binaries in Y_pb. dtKey names the step length as the family's plan spells it.
func (h PlanHead) Check(dtKey string, dt float64, bl Blocking, ypb *gbd.Admissible) error {
	switch {
	case math.Abs(h.Dt-dt) > 1e-9*math.Max(1, dt):
		return fmt.Errorf("%s %v, want %v", dtKey, h.Dt, dt)
	case h.Blocks != bl.Blocks:
		return fmt.Errorf("%d move blocks, want %d", h.Blocks, bl.Blocks)
	case h.Shifted < 0 || h.Shifted >= bl.Steps:
		return fmt.Errorf("shifted %d, want 0 to %d", h.Shifted, bl.Steps-1)
	case len(h.Y) != ypb.NY:
		return fmt.Errorf("%d block binaries, want %d", len(h.Y), ypb.NY)
	}
	for i, v := range h.Y {
		if v != 0 && v != 1 {
			return fmt.Errorf("y[%d] = %v is not 0 or 1", i, v)
		}
	}
	if !ypb.Contains(h.Y) {
		return fmt.Errorf("block binaries %v are not admissible", h.Y)
	}
	return nil
}
