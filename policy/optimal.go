package policy

import (
	"math"

	"gbdmpc/gbd"
)

// TieTol is how close to the expert's objective an assignment must be to count as another optimal
// solution of the same master problem: Algorithm 2's default ε_tol, the tolerance by which the engine
// itself takes a proposal over the master's point (μ̂_B ≤ μ̄_B + ε_tol).
const TieTol = 1e-6

// OptimalSet marks, for one master problem, every assignment of Y_pb that is an optimal solution:
// it passes the feasibility screen and max_k φ_o^(k)(c^(j)) ≤ μ* + TieTol, μ* being the master's
// optimum. Without optimality cuts μ_B is unbounded below and every screened assignment is optimal.
// It returns the number of optimal assignments (0 when the feasibility cuts exclude all of Y_pb).
// y (len NY) is scratch; opt is filled in Y_pb order.
func OptimalSet(cuts []gbd.Cut, ypb *gbd.Admissible, y []float64, opt []bool) int {
	best := math.Inf(1)
	mu := make([]float64, ypb.Count())
	for j := range mu {
		ypb.Float(j, y)
		mu[j] = math.NaN()
		if !gbd.SatisfiesFeasibilityCuts(cuts, y) {
			continue
		}
		v := gbd.MaxOptimality(cuts, y)
		mu[j] = v
		best = math.Min(best, v)
	}
	n := 0
	for j, v := range mu {
		opt[j] = !math.IsNaN(v) && (math.IsInf(best, -1) || v <= best+TieTol)
		if opt[j] {
			n++
		}
	}
	return n
}
