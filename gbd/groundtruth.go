package gbd

import (
	"fmt"
	"math"

	"gbdmpc/gbd/nlp"
)

// GroundTruth is the global optimum of a convex MINLP found without decomposition: S(y) for every
// y ∈ Y_pb, keeping the best feasible one. It is exact (each S(y) is convex) and affordable only for
// small Y_pb; tests and benchmarks use it as the reference answer.
type GroundTruth struct {
	Feasible  bool
	Y         []float64
	X         []float64
	Objective float64
	// Z is the value function at every assignment of Y_pb, in its order (+Inf where infeasible).
	Z []float64
	// Evaluated counts the NLPs solved; FeasibleCount how many assignments were feasible.
	Evaluated, FeasibleCount int
}

// SolveByEnumeration computes the GroundTruth of p over ypb.
func SolveByEnumeration(p *Problem, ypb *Admissible, solver nlp.Solver, set Settings) (*GroundTruth, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	sub := NewSubproblems(p, solver, set.withDefaults().NLP)
	gt := &GroundTruth{Objective: math.Inf(1), Z: make([]float64, ypb.Count())}
	y := make([]float64, p.NY)
	for j := 0; j < ypb.Count(); j++ {
		ypb.Float(j, y)
		res, err := sub.Evaluate(y, 0)
		gt.Evaluated++
		if err != nil {
			return nil, fmt.Errorf("ground truth at y=%v: %w", y, err)
		}
		gt.Z[j] = math.Inf(1)
		if !res.Feasible {
			continue
		}
		gt.Z[j] = res.Z
		gt.FeasibleCount++
		if res.Z < gt.Objective {
			gt.Feasible = true
			gt.Objective = res.Z
			gt.Y = append([]float64(nil), y...)
			gt.X = res.X
		}
	}
	return gt, nil
}
